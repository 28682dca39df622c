module kuota.test/pause

go 1.26

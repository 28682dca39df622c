module kuota.test/kueue-oracle

go 1.26

require sigs.k8s.io/kueue v0.19.2

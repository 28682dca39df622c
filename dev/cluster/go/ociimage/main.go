// Command ociimage writes an OCI image-layout tarball of one layer holding the given files, so
// tests can give the real node's containerd an image without a registry or a Docker engine.
// go-containerregistry writes the layout (digests, manifest, config, index); this program only
// puts the files into the layer with their modes and sets the image config.
//
//	ociimage -o OUT.tar -name REF -entrypoint PATH [-user UID] [-port 8443/tcp]... HOST=IMAGE...
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	out := flag.String("o", "", "path of the OCI image-layout tarball to write")
	ref := flag.String("name", "", "image reference, e.g. kuota.dev/pause:1")
	entrypoint := flag.String("entrypoint", "", "path of the entrypoint inside the image")
	user := flag.String("user", "", "user the image runs as, e.g. 65532")
	var ports repeated
	flag.Var(&ports, "port", "exposed port, e.g. 8443/tcp (repeatable)")
	flag.Parse()
	if *out == "" || *ref == "" || *entrypoint == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ociimage -o OUT.tar -name REF -entrypoint PATH [-user UID] [-port P/tcp]... HOST=IMAGE...")
		os.Exit(2)
	}
	if err := run(*out, *ref, *entrypoint, *user, ports, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(out, ref, entrypoint, user string, ports, files []string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	layerTar, err := layerOf(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	config := v1.Config{Entrypoint: []string{entrypoint}, User: user}
	if len(ports) > 0 {
		config.ExposedPorts = map[string]struct{}{}
		for _, p := range ports {
			config.ExposedPorts[p] = struct{}{}
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config = runtime.GOARCH, "linux", config
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "ociimage")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd names the imported image after this annotation.
	annotations := map[string]string{
		"io.containerd.image.name":          tag.Name(),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// layerOf builds the layer's tar: each HOST=IMAGE file with its mode, its parent directories,
// owned by root, with a fixed time so the same files give the same digest.
func layerOf(files []string) ([]byte, error) {
	hostOf := map[string]string{}
	for _, f := range files {
		host, inImage, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(inImage) {
			return nil, fmt.Errorf("%q: want HOST=/absolute/path/in/image", f)
		}
		hostOf[path.Clean(inImage)[1:]] = host
	}
	targets := make([]string, 0, len(hostOf))
	for t := range hostOf {
		targets = append(targets, t)
	}
	sort.Strings(targets)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	epoch := time.Unix(0, 0)
	for _, target := range targets {
		var parents []string
		for dir := path.Dir(target); dir != "." && !dirs[dir]; dir = path.Dir(dir) {
			parents = append(parents, dir)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			hdr := &tar.Header{Name: parents[i] + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
		}
		content, err := os.ReadFile(hostOf[target])
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(hostOf[target])
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: target, Mode: int64(info.Mode().Perm()), Size: int64(len(content)), ModTime: epoch, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir packs the layout directory into the single file that `ctr images import` reads.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

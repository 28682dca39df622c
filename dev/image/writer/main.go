// Command image-writer writes a single-layer container image as an OCI image layout directory
// from a layer tarball and the image's runtime config; packed into a tarball, the layout is what
// `ctr images import` reads. go-containerregistry writes the blobs, manifest, config and index;
// this program only says what goes in them, so no image format is written by hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type image struct {
	layer, layout, name, user, platform string
	entrypoint, cmd, ports, labels      list
}

func main() {
	var spec image
	flag.StringVar(&spec.layer, "layer", "", "uncompressed tarball of the image's only layer")
	flag.StringVar(&spec.layout, "layout", "", "new directory to write the OCI image layout into")
	flag.StringVar(&spec.name, "name", "", "the image's full name as containerd and the kubelet spell it, e.g. docker.io/library/kuota:dev")
	flag.StringVar(&spec.user, "user", "", "uid:gid the container runs as")
	flag.StringVar(&spec.platform, "platform", "linux/amd64", "os/arch of the binaries in the layer")
	flag.Var(&spec.entrypoint, "entrypoint", "one entrypoint argument (repeatable, in order)")
	flag.Var(&spec.cmd, "cmd", "one default argument after the entrypoint (repeatable, in order)")
	flag.Var(&spec.ports, "port", "an exposed port as PORT/PROTOCOL (repeatable)")
	flag.Var(&spec.labels, "label", "a label as KEY=VALUE (repeatable)")
	flag.Parse()
	if err := spec.write(); err != nil {
		fmt.Fprintln(os.Stderr, "image-writer:", err)
		os.Exit(1)
	}
}

func (spec image) write() error {
	if spec.layer == "" || spec.layout == "" || spec.name == "" {
		return fmt.Errorf("--layer, --layout and --name are required")
	}
	// Only validated: the library would rewrite docker.io to index.docker.io, a name the
	// kubelet never asks containerd for.
	tag, err := name.NewTag(spec.name, name.StrictValidation)
	if err != nil {
		return err
	}
	platform, err := v1.ParsePlatform(spec.platform)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromFile(spec.layer, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return err
	}
	config = config.DeepCopy()
	config.OS, config.Architecture, config.Variant = platform.OS, platform.Architecture, platform.Variant
	config.Config.Entrypoint = spec.entrypoint
	config.Config.Cmd = spec.cmd
	config.Config.User = spec.user
	config.Config.ExposedPorts = map[string]struct{}{}
	for _, port := range spec.ports {
		config.Config.ExposedPorts[port] = struct{}{}
	}
	config.Config.Labels = map[string]string{}
	for _, label := range spec.labels {
		key, value, ok := strings.Cut(label, "=")
		if !ok {
			return fmt.Errorf("label %q is not KEY=VALUE", label)
		}
		config.Config.Labels[key] = value
	}
	if img, err = mutate.ConfigFile(img, config); err != nil {
		return err
	}
	path, err := layout.Write(spec.layout, empty.Index)
	if err != nil {
		return err
	}
	// containerd names the imported image after the first annotation; OCI tools read the tag
	// from the second.
	return path.AppendImage(img, layout.WithPlatform(*platform), layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          spec.name,
		"org.opencontainers.image.ref.name": tag.TagStr(),
	}))
}

// Command oracle prints, as JSON on stdout, facts of the pinned Kueue release that Kuota's
// compatibility tests (tests/kueue_oracle.rs) compare against:
//
//	oracle config-defaults   the Configuration Kueue resolves when given no file, and an empty
//	                         v1beta1 and v1beta2 file (apiVersion and kind only), loaded through
//	                         Kueue's own loader (defaulting, then conversion to v1beta2)
//	oracle metrics           every collector Kueue's metrics registration registers with the
//	                         default feature gates: name, type and variable label names
//
// It is our own program that calls Kueue's packages; nothing of Kueue is copied here.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1beta1 "sigs.k8s.io/kueue/apis/config/v1beta1"
	configv1beta2 "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueueconfig "sigs.k8s.io/kueue/pkg/config"
	kueuemetrics "sigs.k8s.io/kueue/pkg/metrics"
)

func main() {
	if len(os.Args) != 2 {
		fail("usage: oracle config-defaults|metrics")
	}
	var out any
	var err error
	switch os.Args[1] {
	case "config-defaults":
		out, err = configDefaults()
	case "metrics":
		out, err = registeredMetrics()
	default:
		fail("unknown command %q: want config-defaults or metrics", os.Args[1])
	}
	if err != nil {
		fail("%s: %v", os.Args[1], err)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fail("encode: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "oracle: "+format+"\n", args...)
	os.Exit(1)
}

// configDefaults loads each case as Kueue's manager does (config.Load with a scheme holding both
// configuration versions) and returns the resolved v1beta2 Configuration per case: "none" (no
// file), "v1beta1" and "v1beta2" (a file with only apiVersion and kind).
func configDefaults() (map[string]configv1beta2.Configuration, error) {
	scheme := runtime.NewScheme()
	if err := configv1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := configv1beta2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kueue-oracle-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	resolved := map[string]configv1beta2.Configuration{}
	for _, version := range []string{"none", "v1beta1", "v1beta2"} {
		path := ""
		if version != "none" {
			path = filepath.Join(dir, version+".yaml")
			body := "apiVersion: config.kueue.x-k8s.io/" + version + "\nkind: Configuration\n"
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				return nil, err
			}
		}
		_, cfg, err := kueueconfig.Load(scheme, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", version, err)
		}
		resolved[version] = cfg
	}
	return resolved, nil
}

// metric is one registered metric family.
type metric struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Labels []string `json:"labels"`
}

// recorder stands in for controller-runtime's global registry and keeps what is registered,
// so that every collector can be described (a real registry's Gather shows no family that has
// no sample yet).
type recorder struct {
	prometheus.Gatherer
	collectors []prometheus.Collector
}

func (r *recorder) Register(collector prometheus.Collector) error {
	r.collectors = append(r.collectors, collector)
	return nil
}

func (r *recorder) MustRegister(collectors ...prometheus.Collector) {
	r.collectors = append(r.collectors, collectors...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// descPattern reads a Desc's fully-qualified name and variable labels from its String form,
// the only public view client_golang gives of them.
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]*)", .*, variableLabels: \{([^}]*)\}\}$`)

func registeredMetrics() ([]metric, error) {
	registry := &recorder{Gatherer: prometheus.NewRegistry()}
	ctrlmetrics.Registry = registry
	kueuemetrics.Register()

	var metrics []metric
	for _, collector := range registry.collectors {
		kind, err := collectorType(collector)
		if err != nil {
			return nil, err
		}
		descs := make(chan *prometheus.Desc, 16)
		go func() {
			collector.Describe(descs)
			close(descs)
		}()
		for desc := range descs {
			match := descPattern.FindStringSubmatch(desc.String())
			if match == nil {
				return nil, fmt.Errorf("unreadable descriptor %s", desc)
			}
			labels := []string{}
			for _, label := range strings.Split(match[2], ",") {
				if label != "" {
					labels = append(labels, label)
				}
			}
			metrics = append(metrics, metric{Name: match[1], Type: kind, Labels: labels})
		}
	}
	sort.Slice(metrics, func(i, j int) bool { return metrics[i].Name < metrics[j].Name })
	return metrics, nil
}

func collectorType(collector prometheus.Collector) (string, error) {
	switch collector.(type) {
	case *prometheus.CounterVec, prometheus.Counter:
		return "counter", nil
	case *prometheus.GaugeVec, prometheus.Gauge:
		return "gauge", nil
	case *prometheus.HistogramVec, prometheus.Histogram:
		return "histogram", nil
	case *prometheus.SummaryVec, prometheus.Summary:
		return "summary", nil
	default:
		return "", fmt.Errorf("collector of unknown type %T", collector)
	}
}

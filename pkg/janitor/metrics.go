package janitor

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// orphanedResources is capp_orphaned_resources{kind}: the orphans the last sweep found and did
// not delete, by kind.
var orphanedResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "capp_orphaned_resources",
	Help: "Packet objects carrying the provider's tags whose PacketCluster or PacketMachine is gone, as of the janitor's last sweep (deleted ones not counted), by kind.",
}, []string{"kind"})

func init() {
	metrics.Registry.MustRegister(orphanedResources)
}

// recordMetric sets the gauge of every kind from a sweep's orphans.
func recordMetric(orphans []Orphan) {
	counts := map[Kind]int{}
	for _, o := range orphans {
		if !o.Deleted {
			counts[o.Kind]++
		}
	}
	for _, k := range Kinds {
		orphanedResources.WithLabelValues(string(k)).Set(float64(counts[k]))
	}
}

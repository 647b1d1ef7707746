package main

import (
	"maps"
	"testing"
)

// Lines as kube-apiserver v1.36 writes them: an update is counted under its HTTP method, PUT.
const sampleMetrics = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="infrastructure.cluster.x-k8s.io",resource="packetmachines",scope="resource",subresource="",verb="PATCH",version="v1beta1"} 300
apiserver_request_total{code="409",component="apiserver",dry_run="",group="infrastructure.cluster.x-k8s.io",resource="packetmachines",scope="resource",subresource="status",verb="PUT",version="v1beta1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="infrastructure.cluster.x-k8s.io",resource="packetmachines",scope="resource",subresource="status",verb="PUT",version="v1beta1"} 398
apiserver_request_total{code="201",component="apiserver",dry_run="",group="infrastructure.cluster.x-k8s.io",resource="packetmachines",scope="resource",subresource="",verb="POST",version="v1beta1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="infrastructure.cluster.x-k8s.io",resource="packetmachines",scope="resource",subresource="",verb="GET",version="v1beta1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1"} 101
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="PUT",version="v1"} 7
`

func TestCountRequestsCountsWritesOfPacketMachinesAndTheirConflicts(t *testing.T) {
	got, err := countRequests([]byte(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"packetmachines PATCH": 300, "packetmachines PUT status": 398, "packetmachines PUT status (409)": 2, "secrets GET": 101}
	if !maps.Equal(got, want) {
		t.Errorf("countRequests = %v, want %v", got, want)
	}
}

package bootemu

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkTenClusters boots 10 workload clusters of 3 control planes and 10 workers each (130
// devices with the kubeadm bootstrap provider's own user-data) and reports what the emulation
// holds once every Node is Ready: heap and process RSS, the CPU time of the boots, and the cost of
// one steady-state Step over all 130 hosts (the emulation runs one every 500ms).
//
//	go test -run '^$' -bench TenClusters -benchtime 1x ./test/infrastructure/bootemu/
func BenchmarkTenClusters(b *testing.B) {
	for range b.N {
		e := newEnv(b)
		e.sim.SetCapacity("sv", "c3.small.x86", 1000)
		start, cpuStart := time.Now(), cpuTime()
		var clients []*cluster
		for i := range 10 {
			eip := e.reserveElasticIP()
			c := newCluster(b, fmt.Sprintf("bench-%d", i), eip)
			first := e.createDevice(c.name+"-cp-0", c.init(b, "v1.36.3"))
			e.settle(boot)
			e.assign(first, eip)
			e.settle(time.Second)
			createToken(b, c.client(b))
			for j := 1; j < 3; j++ {
				e.createDevice(fmt.Sprintf("%s-cp-%d", c.name, j), c.controlPlaneJoin(b, testToken))
			}
			for j := range 10 {
				e.createDevice(fmt.Sprintf("%s-worker-%d", c.name, j), c.worker(b, testToken, c.caHash()))
			}
			clients = append(clients, c)
		}
		e.settle(boot)
		bootTime, bootCPU := time.Since(start), cpuTime()-cpuStart
		for _, c := range clients {
			if n := len(nodes(b, c.client(b))); n != 13 {
				b.Fatalf("cluster %s has %d nodes, want 13", c.name, n)
			}
		}
		stepStart := time.Now()
		const steps = 20
		for range steps {
			e.emu.Step(e.ctx)
		}
		perStep := time.Since(stepStart) / steps
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(rssMiB(), "rss-MiB")
		b.ReportMetric(bootTime.Seconds(), "boot-s")
		b.ReportMetric(bootCPU.Seconds(), "boot-cpu-s")
		b.ReportMetric(float64(perStep.Microseconds()), "µs/step")
	}
}

// rssMiB is this process's resident set (simulator, emulation and test together).
func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func cpuTime() time.Duration {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	utime, _ := strconv.ParseInt(f[13], 10, 64)
	stime, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

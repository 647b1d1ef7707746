package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/sandbox"
)

var (
	sb        *sandbox.Sandbox
	sim       *SimClient
	k8s       client.Client
	artifacts string
	// sshKey is the public key the suite's clusters get: the provider registers it as a project
	// SSH key labelled with the cluster, so the leak check can see it.
	sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzvUGo2Th1o1sLkX6CJWqnqp9F1W9VAhmUGUpM4fPRY e2e@capp"
)

func TestE2E(t *testing.T) {
	if os.Getenv("PACKET_E2E") == "" {
		t.Skip("the e2e suite runs through `make test-e2e`, which builds the sandbox's binaries and sets PACKET_E2E")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyPollingInterval(time.Second)
	SetDefaultEventuallyTimeout(3 * time.Minute)
	ReportFailuresLast(t)
	RunSpecs(t, "Cluster API Provider Packet e2e (sandbox)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	root := repoRoot()
	artifacts = sandbox.EnvOr("E2E_ARTIFACTS", filepath.Join(root, "_artifacts"))
	var portBase int
	_, err := fmt.Sscan(sandbox.EnvOr("E2E_PORT_BASE", "17400"), &portBase)
	Expect(err).NotTo(HaveOccurred())
	// Each of Ginkgo's parallel processes runs its share of the specs on a sandbox of its own.
	proc := GinkgoParallelProcess()
	portBase, publicIPv4, stateDir := portBase+1000*(proc-1), fmt.Sprintf("127.%d.0.0/16", 65+2*(proc-1)), filepath.Join(artifacts, "sandbox")
	if proc > 1 {
		stateDir += fmt.Sprintf("-%d", proc)
	}
	publicIPv4 = sandbox.EnvOr("E2E_PUBLIC_IPV4", publicIPv4)
	var tweaks []func(*sandbox.Config)
	previous, err := startMigrationRun(portBase)
	Expect(err).NotTo(HaveOccurred())
	if previous != nil {
		tweaks = append(tweaks, previous)
	}
	start := time.Now()
	sb, err = StartSandbox(context.WithoutCancel(ctx), root, stateDir, portBase, publicIPv4,
		func(format string, args ...any) { fmt.Fprintf(GinkgoWriter, format+"\n", args...) }, tweaks...)
	if err != nil {
		dumpComponentLogs(filepath.Join(artifacts, fmt.Sprintf("suite-setup-%d", proc)))
	}
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "Sandbox ready in %s (state in %s)\n", time.Since(start).Round(100*time.Millisecond), stateDir)
	k8s = sb.Client
	sim = SimClientFor(sb)
}, NodeTimeout(5*time.Minute))

var _ = AfterSuite(func() {
	if sb == nil {
		return
	}
	var pids []int
	for _, c := range sb.Components {
		pids = append(pids, c.Pid())
	}
	specErr := ExpectSpecConformance(context.Background(), sim, GinkgoWriter)
	sb.Stop()
	if migration != nil {
		_ = migration.proxy.Close()
	}
	Expect(specErr).NotTo(HaveOccurred(), "every Packet API answer of the suite meets the published spec")
	// Nothing the sandbox started may be left running.
	for i, pid := range pids {
		Expect(sandbox.Alive(pid)).To(BeFalse(), "%s (pid %d) is still running after Stop", sb.Components[i].Name, pid)
	}
})

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

package capi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/e2e"
)

// deviceLogCollector is the framework's log collector for a machine: what a user would look at
// on Packet, the device as the API shows it and its serial console, where the emulation writes
// the boot (cloud-init, kubeadm) as a real server would. The managers' and the simulator's logs
// are in the sandbox's state folder inside the artifacts.
type deviceLogCollector struct{ sim *e2e.SimClient }

func (c deviceLogCollector) CollectMachineLog(ctx context.Context, _ client.Client, m *clusterv1.Machine, outputPath string) error {
	id, err := infrav1.ParseProviderID(m.Spec.ProviderID)
	if err != nil {
		return nil //nolint:nilerr // a Machine without a device has no device logs.
	}
	if err := os.MkdirAll(outputPath, 0o755); err != nil {
		return err
	}
	dev, err := c.sim.Device(ctx, id)
	if err != nil {
		return fmt.Errorf("reading device %s: %w", id, err)
	}
	data, err := json.MarshalIndent(dev, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outputPath, "device.json"), data, 0o644); err != nil {
		return err
	}
	console, err := c.sim.Console(ctx, id)
	if err != nil {
		return fmt.Errorf("reading the console of device %s: %w", id, err)
	}
	return os.WriteFile(filepath.Join(outputPath, "console.log"), []byte(console), 0o644)
}

// CollectMachinePoolLog has nothing to do: the provider has no machine pools.
func (deviceLogCollector) CollectMachinePoolLog(context.Context, client.Client, *clusterv1.MachinePool, string) error {
	return nil
}

// CollectInfrastructureLogs has nothing to add: the simulator's log is in the sandbox's folder.
func (deviceLogCollector) CollectInfrastructureLogs(context.Context, client.Client, *clusterv1.Cluster, string) error {
	return nil
}

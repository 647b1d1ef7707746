package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/test/infrastructure/packetsim"
)

// userDataMarker is in every machine's bootstrap data; it must never show up in a log.
const userDataMarker = "capp-scale-secret-userdata"

// workload is one cluster with n machines, created the way Cluster API core would create them
// (core itself is not running: owner references, labels and Cluster status are set here).
type workload struct {
	c         client.Client
	namespace string
	cluster   string
	n         int
	// sshKey, when set, is given to every other machine: machines created together then
	// register one new project SSH key at the same time.
	sshKey string
	// apiKey, when set, is put in a credentials Secret the PacketCluster names, instead of the
	// cluster using the manager's key.
	apiKey string
	// projectID is the cluster's Packet project; the simulator's default one when empty.
	projectID string
	// labels go on the Cluster, the PacketCluster, the Machines and the PacketMachines (a
	// shard's watch-filter label).
	labels map[string]string
	// watcher, when set, lets the waits follow a watch instead of listing (see waitMachines).
	watcher client.WithWatch
}

// objectLabels are the workload's labels with extra.
func (w *workload) objectLabels(extra map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, w.labels)
	maps.Copy(out, extra)
	return out
}

func (w *workload) create(ctx context.Context) error {
	if err := w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}); err != nil {
		return err
	}
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: w.cluster, Namespace: w.namespace, Labels: w.objectLabels(nil)},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "PacketCluster", Name: w.cluster}},
	}
	if err := w.c.Create(ctx, cluster); err != nil {
		return err
	}
	pc := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{Name: w.cluster, Namespace: w.namespace,
			Labels: w.objectLabels(map[string]string{clusterv1.ClusterNameLabel: w.cluster}),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
				Name: cluster.Name, UID: cluster.UID}}},
		Spec: infrav1.PacketClusterSpec{ProjectID: cmp.Or(w.projectID, packetsim.DefaultProjectID), Metro: "sv"},
	}
	if w.apiKey != "" {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: w.cluster + "-packet", Namespace: w.namespace},
			Data: map[string][]byte{"apiKey": []byte(w.apiKey)}}
		if err := w.c.Create(ctx, secret); err != nil {
			return err
		}
		pc.Spec.CredentialsRef = &infrav1.SecretReference{Name: secret.Name}
	}
	if err := w.c.Create(ctx, pc); err != nil {
		return err
	}
	// Under the soak's faults a reservation answered with a 5xx may exist anyway, and the
	// PacketCluster waits out its confirm window (2m) before reserving again; API errors are
	// retried a minute apart.
	if err := waitFor(ctx, 6*time.Minute, "PacketCluster provisioned", func() (bool, error) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(pc), pc); err != nil {
			return false, err
		}
		return ptr.Deref(pc.Status.Initialization.Provisioned, false), nil
	}); err != nil {
		return err
	}
	// What core's Cluster controller does once the infrastructure is provisioned.
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := w.c.Status().Update(ctx, cluster); err != nil {
		return err
	}
	for i := range w.n {
		if err := w.createMachine(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

func (w *workload) createMachine(ctx context.Context, i int) error {
	name := w.machineName(i)
	labels := w.objectLabels(map[string]string{clusterv1.ClusterNameLabel: w.cluster})
	if i == 0 {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-bootstrap", Namespace: w.namespace, Labels: labels},
		Data: map[string][]byte{
			"format": []byte("cloud-config"),
			"value":  []byte("#cloud-config\nwrite_files:\n- path: /etc/marker\n  content: " + userDataMarker + "\n"),
		},
	}
	if err := w.c.Create(ctx, secret); err != nil {
		return err
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.namespace, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: w.cluster,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(secret.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "PacketMachine", Name: name},
		},
	}
	if err := w.c.Create(ctx, machine); err != nil {
		return err
	}
	pm := &infrav1.PacketMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine",
				Name: machine.Name, UID: machine.UID, Controller: ptr.To(true)}}},
		Spec: infrav1.PacketMachineSpec{OS: "ubuntu_24_04", MachineType: "c3.small.x86", BillingCycle: "hourly"},
	}
	if w.sshKey != "" && i%2 == 1 {
		pm.Spec.SSHKeys = []string{w.sshKey}
	}
	return w.c.Create(ctx, pm)
}

// machines lists the workload's PacketMachines.
func (w *workload) machines(ctx context.Context) ([]infrav1.PacketMachine, error) {
	list := &infrav1.PacketMachineList{}
	err := w.c.List(ctx, list, client.InNamespace(w.namespace))
	return list.Items, err
}

// deviceID returns the device ID in the i-th PacketMachine's spec.providerID.
func (w *workload) deviceID(ctx context.Context, i int) (string, error) {
	pm := &infrav1.PacketMachine{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: w.machineName(i)}, pm); err != nil {
		return "", err
	}
	return strings.TrimPrefix(pm.Spec.ProviderID, infrav1.ProviderIDPrefix), nil
}

// deleteAll deletes every PacketMachine (envtest has no garbage collector, so deleting the
// Machines would not reach them), waits for them to go, deletes the Machines, then the
// PacketCluster: the order Cluster API core keeps (a Machine goes once its infrastructure is
// gone). Machines left behind would be mapped to their gone PacketMachines at every change
// of the PacketCluster.
func (w *workload) deleteAll(ctx context.Context, timeout time.Duration) error {
	if err := deleteAllOf(ctx, w.c, &infrav1.PacketMachine{}, w.namespace); err != nil {
		return err
	}
	if err := w.waitMachines(ctx, timeout, "every machine deleted", func(machines map[string]*infrav1.PacketMachine, _ []*infrav1.PacketMachine) bool {
		return len(machines) == 0
	}); err != nil {
		return err
	}
	if err := deleteAllOf(ctx, w.c, &clusterv1.Machine{}, w.namespace); err != nil {
		return err
	}
	pc := &infrav1.PacketCluster{ObjectMeta: metav1.ObjectMeta{Name: w.cluster, Namespace: w.namespace}}
	if err := w.c.Delete(ctx, pc); err != nil {
		return err
	}
	return waitFor(ctx, timeout, "PacketCluster deleted", func() (bool, error) {
		err := w.c.Get(ctx, client.ObjectKeyFromObject(pc), pc)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// deleteAllOf deletes every object of obj's kind in namespace. A kube-apiserver busy with ten
// thousand machines may take longer than its request timeout to mark a thousand objects deleted
// and answer with a timeout or a reset stream while it goes on; the request is then sent again
// (objects already marked are skipped), a few times.
func deleteAllOf(ctx context.Context, c client.Client, obj client.Object, namespace string) error {
	again := wait.Backoff{Duration: 5 * time.Second, Steps: 10}
	return retry.OnError(again, func(error) bool { return ctx.Err() == nil }, func() error {
		err := c.DeleteAllOf(ctx, obj, client.InNamespace(namespace))
		if err != nil {
			fmt.Printf("deleting in %s: %v; asking again\n", namespace, err)
		}
		return err
	})
}

// waitFor polls done every half second until it reports true or an error, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, done func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return done()
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
	}
	return err
}

// machineName is the name of the i-th machine's Machine and PacketMachine.
func (w *workload) machineName(i int) string { return fmt.Sprintf("m-%04d", i) }

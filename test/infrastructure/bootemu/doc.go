// Package bootemu emulates what the operating system of a Packet device does with its user-data,
// so that the simulator's devices become the nodes of real-looking workload clusters.
//
// When a simulated device turns active, an emulated host reads the device's user-data and does
// what cloud-init and kubeadm would: "kubeadm init" brings up a control plane — an API server and
// an etcd member built from Cluster API's in-memory building blocks
// (sigs.k8s.io/cluster-api/test/infrastructure/inmemory) — served on the control-plane endpoint
// with a certificate signed by the cluster CA that the bootstrap data carries; "kubeadm join"
// registers a Node, after checking the bootstrap token and the CA hash as kubeadm does. Nothing
// else decides whether a node appears: bootstrap data that is not valid cloud-config, that still
// holds a template key, or that joins with the wrong token, gives an active device without a Node,
// and the reason goes to the device's events and serial console (GET /_sim/devices/{id}/console).
//
// The endpoint answers only while Packet would route it: while the elastic IP is assigned to an
// active control-plane device of the cluster, or, when the bootstrap data runs kube-vip, while an
// active control plane has a BGP session, or, when the endpoint's address is a load balancer's of
// Packet's load-balancer service (the simulator's /lbaas API), while that load balancer has a
// port on the endpoint's port whose pools hold an active origin naming a public address of a live
// control plane of the cluster and the port its API server binds (kubeadm's
// localAPIEndpoint.bindPort, 6443 by default). Inside a real cluster the Cloud Provider for
// Equinix Metal (CPEM) moves the elastic IP to a live control plane when its holder goes away;
// the emulation does the same, through the Packet API, for clusters whose bootstrap data installs
// CPEM, and only once the cluster has come up (CPEM runs in it). It never moves the address of a
// load balancer: keeping the origins right is the provider's job.
//
// Devices that are powered off, rebooting or gone make their Node NotReady or disappear, so a
// MachineHealthCheck sees them. The simulator's host_down fault hangs a device's operating system
// while the device stays active (its Node NotReady, a control plane out of the endpoint's
// routing) until the boot the fault allows. Packet's reinstall rewrites the disk: the boot after
// it reads the device's user-data again and runs kubeadm again. The emulation runs in the simulator's process (packetsim --boot).
package bootemu

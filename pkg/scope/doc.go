// Package scope holds what one reconcile of a Packet object works with: the Kubernetes objects,
// the Packet client for the cluster's credentials, this management cluster's identity, and what
// writes the object back (Cluster API's patch helper for a PacketCluster; for a PacketMachine the
// machineWriter, one patch of metadata and spec and one update of the whole status). Services
// read and set state through a scope; Close summarises the conditions into Ready and writes
// once. Scopes hold no Packet logic.
package scope

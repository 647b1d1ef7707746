package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// credentialsSource is where a reconciler connects to Packet from: a PacketCluster's Secret, read
// with reader (the manager's client reads Secrets from the API server, see ClientOptions), else
// the manager's own key for the projects it serves.
func credentialsSource(reader client.Reader, clients credentials.ClientProvider, apiKey string, projects []string) *credentials.Source {
	return &credentials.Source{Reader: reader, Clients: clients, Default: credentials.Default{APIKey: apiKey, Projects: projects}}
}

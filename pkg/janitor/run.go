package janitor

import (
	"context"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

// Targets returns the projects to sweep: every one of projects with the manager's own key, and
// the project of every PacketCluster with the credentials that cluster uses (its credentialsRef,
// else the manager's key). A PacketCluster whose credentials cannot be resolved is skipped and
// logged. Each project is swept once per API key.
func Targets(ctx context.Context, creds *credentials.Source, projects []string) ([]Target, error) {
	log := ctrl.LoggerFrom(ctx).WithName("janitor")
	var targets []Target
	seen := map[string]bool{}
	add := func(projectID, source, apiKey string) {
		key := strings.ToLower(projectID) + "\x00" + source
		if projectID == "" || seen[key] {
			return
		}
		c, err := creds.Clients.ClientFor(source, apiKey)
		if err != nil {
			log.Info("Not sweeping project: no Packet client", "project", projectID, "reason", err.Error())
			return
		}
		seen[key] = true
		targets = append(targets, Target{ProjectID: projectID, Client: c})
	}
	if creds.Default.APIKey != "" {
		for _, p := range projects {
			add(p, "", creds.Default.APIKey)
		}
	}
	pcs := &infrav1.PacketClusterList{}
	if err := creds.Reader.List(ctx, pcs); err != nil {
		return nil, err
	}
	for i := range pcs.Items {
		pc := &pcs.Items[i]
		keys, err := creds.Resolve(ctx, pc)
		if err != nil {
			log.Info("Not sweeping a PacketCluster's project with its credentials", "packetCluster", client.ObjectKeyFromObject(pc),
				"project", pc.Spec.ProjectID, "reason", err.Error())
			continue
		}
		add(pc.Spec.ProjectID, keys.Source, keys.APIKey)
	}
	return targets, nil
}

// Runnable sweeps every interval, first right away, with the targets targets returns each time.
// It needs leader election (manager.RunnableFunc does), so only the leading replica sweeps.
// Errors are logged; the next sweep tries again.
func (j *Janitor) Runnable(interval time.Duration, targets func(ctx context.Context) ([]Target, error)) manager.RunnableFunc {
	return func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName("janitor")
		log.Info("Orphan janitor started", "interval", interval, "gracePeriod", j.GracePeriod, "delete", j.Delete)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			if ts, err := targets(ctx); err != nil {
				log.Error(err, "Listing the projects to sweep")
			} else if orphans, err := j.Sweep(ctx, ts); err != nil {
				log.Error(err, "Sweep incomplete", "orphans", len(orphans))
			} else {
				log.V(1).Info("Sweep done", "projects", len(ts), "orphans", len(orphans))
			}
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C:
			}
		}
	}
}

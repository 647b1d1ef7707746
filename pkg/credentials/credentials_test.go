package credentials_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/credentials"
)

func TestTheDefaultKeyServesOnlyTheProjectsItIsGiven(t *testing.T) {
	const mine, theirs = "00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000b2"
	cluster := func(project string) *infrav1.PacketCluster {
		return &infrav1.PacketCluster{Spec: infrav1.PacketClusterSpec{ProjectID: project}}
	}
	anyProject := &credentials.Source{Default: credentials.Default{APIKey: "k"}}
	if c, err := anyProject.Resolve(context.Background(), cluster(theirs)); err != nil || c.APIKey != "k" || c.Source != "" {
		t.Fatalf("without a list the default key serves any project: %+v, %v", c, err)
	}
	listed := &credentials.Source{Default: credentials.Default{APIKey: "k", Projects: []string{strings.ToUpper(mine)}}}
	if c, err := listed.Resolve(context.Background(), cluster(mine)); err != nil || c.APIKey != "k" {
		t.Fatalf("a listed project (any case) is served: %+v, %v", c, err)
	}
	c, err := listed.Resolve(context.Background(), cluster(theirs))
	var credErr *credentials.Error
	if !errors.As(err, &credErr) || !strings.Contains(err.Error(), "does not serve project "+theirs) || c.APIKey != "" {
		t.Fatalf("an unlisted project got %+v, %v; want credentials.Error naming it and no key", c, err)
	}
}

func TestCredentialsFinalizersAreValidAndDistinctForEveryClusterName(t *testing.T) {
	long := strings.Repeat("a", 250)
	names := []string{"c1", strings.Repeat("b", 63), long + "x", long + "y"}
	seen := map[string]bool{}
	for _, name := range names {
		f := credentials.Finalizer(name)
		if errs := validation.IsQualifiedName(f); len(errs) > 0 {
			t.Fatalf("finalizer %q for a PacketCluster named %d characters long is not a qualified name: %v", f, len(name), errs)
		}
		if seen[f] {
			t.Fatalf("two PacketCluster names share the finalizer %q", f)
		}
		seen[f] = true
	}
}

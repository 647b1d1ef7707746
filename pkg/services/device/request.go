package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/sshkeys"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/services/userdata"
)

// refusesSpec sets DeviceReady and reports true when the spec asks for what the provider does
// not create, for a reason the webhook cannot see.
func (s *Service) refusesSpec() bool {
	pm := s.scope.PacketMachine
	spec := pm.Spec
	if spec.SpotInstance && s.scope.IsControlPlane() && pm.Annotations[infrav1.AllowSpotControlPlaneAnnotation] != "true" {
		// Checked here too: a PacketMachineTemplate cannot know it is a control plane's. Not an
		// InvalidRequest, which waits for a spec change: the fix is an annotation.
		s.setCondition(metav1.ConditionFalse, infrav1.SpotControlPlaneNotAllowedReason, fmt.Sprintf(
			"spec.spotInstance: control planes are not spot devices unless annotated %s: \"true\"; one price rise can reclaim several and lose etcd quorum",
			infrav1.AllowSpotControlPlaneAnnotation))
		return true
	}
	if spec.IPXEUrl != "" && spec.OS != infrav1.CustomIPXEOS {
		s.setCondition(metav1.ConditionFalse, infrav1.InvalidRequestReason,
			fmt.Sprintf("spec.ipxeURL is only used with os %q, not %q", infrav1.CustomIPXEOS, spec.OS))
		return true
	}
	return false
}

// buildRequest assembles the create request. When something the request needs is missing or
// wrong it sets DeviceReady, and returns a nil request with when to try again.
func (s *Service) buildRequest(ctx context.Context) (*packet.CreateDeviceRequest, ctrl.Result, error) {
	sc := s.scope
	pm, spec := sc.PacketMachine, sc.PacketMachine.Spec

	userData, err := userdata.ForMachine(ctx, sc)
	var ude *userdata.Error
	if errors.As(err, &ude) {
		s.setCondition(metav1.ConditionFalse, ude.Reason, ude.Error())
		switch ude.Reason {
		case infrav1.WaitingForBootstrapDataReason:
			// The Secret is not watched; look again soon.
			return nil, ctrl.Result{}, err
		case infrav1.BootstrapDataInvalidReason:
			// The bootstrap Secret is not watched; it may be fixed without the PacketMachine changing.
			record.Warnf(pm, infrav1.BootstrapDataInvalidReason, "%s", ude.Error())
			return nil, ctrl.Result{RequeueAfter: apistatus.SlowRetry}, nil
		}
		return nil, ctrl.Result{}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}

	if s.refusesSpec() {
		return nil, ctrl.Result{}, nil
	}

	keyIDs, err := sshkeys.Resolve(ctx, sc.Packet, sc.ProjectID(), infrav1.SSHKeyLabel(sc.Cluster.Namespace, sc.Cluster.Name), spec.SSHKeys)
	if err != nil {
		var apiErr *packet.Error
		if errors.As(err, &apiErr) {
			res, err := apistatus.Record(pm, infrav1.DeviceReadyCondition, err, 0)
			return nil, res, err
		}
		s.setCondition(metav1.ConditionFalse, infrav1.InvalidRequestReason, err.Error())
		return nil, ctrl.Result{}, nil
	}

	// The identity tag comes from the annotation, which create persists with
	// CreateStartedAnnotation before sending; a request never sent leaves nothing tagged with it.
	sc.EnsureIdentity()
	return s.newRequest(userData, keyIDs), ctrl.Result{}, nil
}

// newRequest is the create request for the spec, with the bootstrap user-data and the IDs of the
// project SSH keys to install.
func (s *Service) newRequest(userData string, keyIDs []string) *packet.CreateDeviceRequest {
	sc := s.scope
	pm, spec := sc.PacketMachine, sc.PacketMachine.Spec
	metro, facility := sc.Location()
	req := &packet.CreateDeviceRequest{
		ProjectID:        sc.ProjectID(),
		Hostname:         Hostname(pm.Name),
		Plan:             spec.MachineType,
		OS:               spec.OS,
		BillingCycle:     spec.BillingCycle,
		Metro:            metro,
		Facility:         facility,
		UserData:         userData,
		Tags:             infrav1.WithManagementCluster(deviceTags(sc.IdentityTags(), spec.Tags), sc.ManagementCluster),
		AlwaysPXE:        spec.AlwaysPXE,
		ProjectSSHKeyIDs: keyIDs,
		PrivateIPv4Only:  !spec.Network.WantsPublicIPv4(),
	}
	if spec.SpotInstance && spec.SpotPriceMax != nil {
		req.SpotInstance, req.SpotPriceMax = true, spec.SpotPriceMax.AsApproximateFloat64()
	}
	if req.BillingCycle == "" {
		req.BillingCycle = infrav1.DefaultBillingCycle
	}
	if spec.OS == infrav1.CustomIPXEOS {
		req.IPXEScriptURL = spec.IPXEUrl
	}
	if spec.CustomData != nil && len(spec.CustomData.Raw) > 0 {
		req.CustomData = string(spec.CustomData.Raw)
	}
	if spec.Storage != nil {
		// The API type is the Metal API's Storage schema field for field: it cannot fail.
		req.Storage, _ = json.Marshal(spec.Storage)
	}
	return req
}

// deviceTags are the identity tags followed by the user's tags, without repeats. A user tag
// with the provider's prefixes is dropped (the webhook refuses them; with webhooks off it could
// make the device pass for another machine's).
func deviceTags(identity, user []string) []string {
	tags := make([]string, 0, len(identity)+len(user))
	seen := map[string]bool{}
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	for _, t := range identity {
		add(t)
	}
	for _, t := range user {
		if !infrav1.IsReservedTag(t) {
			add(t)
		}
	}
	return tags
}

// Package network wires a machine's device as its spec.network asks: it puts the ports into the
// port mode (Packet's network type) and attaches the VLANs, one step per reconcile, reading the
// ports from Packet before each step so that a manager killed between two steps picks up where
// Packet is. It owns the NetworkReady condition.
package network

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/record"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "sigs.k8s.io/cluster-api-provider-packet/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/apistatus"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/cloud/packet"
	"sigs.k8s.io/cluster-api-provider-packet/pkg/scope"
)

// stepInterval is how soon the ports are read again after a conversion step or while the
// cluster's VLAN is not known yet.
const stepInterval = 5 * time.Second

// Service wires one machine's device.
type Service struct {
	scope *scope.MachineScope
}

// NewService returns the network service of a machine.
func NewService(s *scope.MachineScope) *Service { return &Service{scope: s} }

// Reconcile moves the device one step towards the spec: a conversion, or the missing VLANs. A
// machine that asks for Packet's defaults costs no call; a wired one costs none once ready.
func (s *Service) Reconcile(ctx context.Context, dev *packet.Device) (ctrl.Result, error) {
	pm := s.scope.PacketMachine
	spec := pm.Spec.Network
	mode := spec.PortModeOrDefault()
	if mode == infrav1.PortModeLayer3 && (spec == nil || len(spec.VLANs) == 0) {
		s.set(metav1.ConditionTrue, infrav1.NotNeededReason, "The device keeps Packet's layer-3 bonded ports")
		return ctrl.Result{}, nil
	}
	if c := conditions.Get(pm, infrav1.NetworkReadyCondition); c != nil && c.Status == metav1.ConditionTrue &&
		c.ObservedGeneration == pm.Generation {
		return ctrl.Result{}, nil
	}
	vlans, wait, err := s.wantedVLANs(ctx)
	if err != nil {
		return apistatus.Record(pm, infrav1.NetworkReadyCondition, err, apistatus.SlowRetry)
	}
	if wait != nil {
		s.set(metav1.ConditionFalse, wait.reason, wait.message)
		return ctrl.Result{RequeueAfter: wait.after}, nil
	}
	ports, err := s.scope.Packet.GetDevicePorts(ctx, dev.ID)
	if err != nil {
		return apistatus.Record(pm, infrav1.NetworkReadyCondition, err, apistatus.SlowRetry)
	}
	step, err := s.nextStep(ctx, mode, ports, vlans)
	if err != nil {
		return apistatus.Record(pm, infrav1.NetworkReadyCondition, err, apistatus.SlowRetry)
	}
	apistatus.Answered(pm)
	if step != "" {
		s.set(metav1.ConditionFalse, infrav1.NetworkConfiguringReason, step)
		return ctrl.Result{RequeueAfter: stepInterval}, nil
	}
	msg := fmt.Sprintf("Device %s is %s with %d VLAN(s)", dev.ID, mode, len(vlans))
	if !conditions.IsTrue(pm, infrav1.NetworkReadyCondition) {
		record.Eventf(pm, "NetworkConfigured", "%s", msg)
	}
	s.set(metav1.ConditionTrue, infrav1.NetworkConfiguredReason, msg)
	return ctrl.Result{}, nil
}

// waitReason says why the VLANs cannot be attached yet, and when to look again.
type waitReason struct {
	reason, message string
	after           time.Duration
}

// notFoundRetry is how often a VLAN named by VXLAN that does not exist is looked for again: it
// may be created by someone else, but not in the next seconds.
const notFoundRetry = time.Minute

// wantedVLAN is a VLAN resolved to its UUID, on the port it goes to.
type wantedVLAN struct {
	port, vlanID string
}

// wantedVLANs resolves the spec's VLANs to UUIDs; the reason to wait when the cluster's VLAN is
// not known yet, or one cannot be found.
func (s *Service) wantedVLANs(ctx context.Context) ([]wantedVLAN, *waitReason, error) {
	spec := s.scope.PacketMachine.Spec.Network
	var out []wantedVLAN
	for _, v := range spec.VLANs {
		port := v.Port
		if port == "" {
			port = spec.PortModeOrDefault().DefaultPort()
		}
		id, wait, err := s.resolve(ctx, v)
		if err != nil || wait != nil {
			return nil, wait, err
		}
		out = append(out, wantedVLAN{port: port, vlanID: id})
	}
	return out, nil, nil
}

// resolve finds a VLAN's UUID; or why to wait for it.
func (s *Service) resolve(ctx context.Context, v infrav1.MachineVLAN) (string, *waitReason, error) {
	if v.Cluster {
		st := s.scope.PacketCluster.Status.Network
		if st == nil || st.VLANID == "" {
			return "", &waitReason{infrav1.NetworkConfiguringReason, "Waiting for the cluster's VLAN", stepInterval}, nil
		}
		return st.VLANID, nil, nil
	}
	// A VLAN named by ID or VXLAN is looked up either way: it must not be another tenant's.
	metro, _ := s.scope.Location()
	vlans, err := s.scope.Packet.ListVLANs(ctx, s.scope.ProjectID(), metro)
	if err != nil {
		return "", nil, err
	}
	for _, vn := range vlans {
		named := vn.ID == v.ID
		if v.ID == "" {
			named = vn.VXLAN == v.VXLAN
		}
		if !named {
			continue
		}
		if infrav1.DescribedForAnotherNamespace(vn.Description, s.scope.PacketMachine.Namespace) {
			return "", &waitReason{infrav1.VLANNotOwnedReason, fmt.Sprintf(
				"VLAN %d (%s) was made for a cluster of another namespace (%s)", vn.VXLAN, vn.ID, vn.Description), notFoundRetry}, nil
		}
		return vn.ID, nil, nil
	}
	if v.ID != "" {
		return "", &waitReason{infrav1.VLANNotFoundReason, fmt.Sprintf("No VLAN %s in metro %s", v.ID, metro), notFoundRetry}, nil
	}
	return "", &waitReason{infrav1.VLANNotFoundReason, fmt.Sprintf("No VLAN with VXLAN %d in metro %s", v.VXLAN, metro), notFoundRetry}, nil
}

// nextStep sends the first conversion the device still needs and says what it did, or attaches
// the missing VLANs and returns "": the device is then as the spec asks.
func (s *Service) nextStep(ctx context.Context, mode infrav1.PortMode, ports []packet.Port, vlans []wantedVLAN) (string, error) {
	byName := map[string]packet.Port{}
	for _, p := range ports {
		byName[p.Name] = p
	}
	bond0, eth1 := byName["bond0"], byName["eth1"]
	client := s.scope.Packet
	switch {
	case mode == infrav1.PortModeHybrid && eth1.Bonded:
		return "Taking eth1 out of bond0", client.DisbondPort(ctx, eth1.ID, false)
	case mode.Layer2() && !strings.HasPrefix(bond0.NetworkType, "layer2"):
		return "Converting bond0 to layer 2", client.ConvertPortToLayer2(ctx, bond0.ID)
	case mode == infrav1.PortModeLayer2Individual && (bond0.Bonded || eth1.Bonded):
		return "Breaking bond0 into eth0 and eth1", client.DisbondPort(ctx, bond0.ID, true)
	}
	// Attachments are independent and Packet answers each with the port as it now is, so they
	// all go in this reconcile and need no second read.
	for _, v := range vlans {
		port, ok := byName[v.port]
		if !ok {
			return "", fmt.Errorf("device has no port %s", v.port)
		}
		if slices.Contains(port.VLANIDs, v.vlanID) {
			continue
		}
		if err := client.AssignVLAN(ctx, port.ID, v.vlanID); err != nil && !packet.IsAlreadyAssigned(err) {
			return "", err
		}
	}
	return "", nil
}

func (s *Service) set(status metav1.ConditionStatus, reason, message string) {
	conditions.Set(s.scope.PacketMachine, metav1.Condition{
		Type: infrav1.NetworkReadyCondition, Status: status, Reason: reason, Message: message,
	})
}

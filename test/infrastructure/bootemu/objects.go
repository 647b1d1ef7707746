package bootemu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// What kubeadm and the kubelet put into a workload cluster, in the order Cluster API's in-memory
// backend does (test/infrastructure/docker/.../inmemorymachine_backend.go): the Node, then for
// control planes the etcd member and the static pods, then the objects kubeadm init creates.

// staticPods are the control-plane components kubeadm runs as static pods; KCP checks all four.
var staticPods = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}

func createIfMissing(ctx context.Context, c inmemoryruntime.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// registerNode is what the kubelet does when it starts: register the Node, Ready.
func registerNode(ctx context.Context, c inmemoryruntime.Client, h *host, kubeletVersion string, addresses []corev1.NodeAddress) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: h.boot.NodeName, Labels: map[string]string{
			corev1.LabelHostname: h.boot.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}},
		Spec: corev1.NodeSpec{ProviderID: h.providerID()},
		Status: corev1.NodeStatus{
			Addresses:  addresses,
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: kubeletVersion, OperatingSystem: "linux", Architecture: "amd64"},
			Conditions: nodeConditions(true),
		},
	}
	if h.controlPlane() {
		node.Labels["node-role.kubernetes.io/control-plane"] = ""
		node.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		node.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	return createIfMissing(ctx, c, node)
}

// setNodeReady is the kubelet posting its status, or — when the host is down — the node
// lifecycle controller marking a node whose kubelet stopped posting it.
func setNodeReady(ctx context.Context, c inmemoryruntime.Client, name string, ready bool) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && (cond.Status == corev1.ConditionTrue) == ready {
			return nil
		}
	}
	node.Status.Conditions = nodeConditions(ready)
	return c.Update(ctx, node)
}

func nodeConditions(ready bool) []corev1.NodeCondition {
	now := metav1.Now()
	if !ready {
		// The node lifecycle controller sets every condition Unknown when the kubelet goes silent.
		var out []corev1.NodeCondition
		for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			out = append(out, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown, LastTransitionTime: now,
				LastHeartbeatTime: now, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."})
		}
		return out
	}
	return []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: now, LastHeartbeatTime: now,
			Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: now, LastHeartbeatTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastTransitionTime: now, LastHeartbeatTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastTransitionTime: now, LastHeartbeatTime: now},
	}
}

// startControlPlane adds the host's etcd member and its static pods. The first member founds
// the etcd cluster and leads it; later ones join it.
func startControlPlane(ctx context.Context, c inmemoryruntime.Client, node string) error {
	etcdPods := &corev1.PodList{}
	if err := c.List(ctx, etcdPods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"component": "etcd"}); err != nil {
		return err
	}
	clusterID, members, haveLeader := "", map[string]bool{}, false
	for _, p := range etcdPods.Items {
		if p.Name == "etcd-"+node {
			continue
		}
		if _, removed := p.Annotations[cloudv1.EtcdMemberRemoved]; removed {
			continue
		}
		clusterID = p.Annotations[cloudv1.EtcdClusterIDAnnotationName]
		members[p.Annotations[cloudv1.EtcdMemberIDAnnotationName]] = true
		haveLeader = haveLeader || p.Annotations[cloudv1.EtcdLeaderFromAnnotationName] != ""
	}
	if clusterID == "" {
		clusterID = strconv.FormatUint(uint64(rand.Uint32()|1), 10)
	}
	memberID := ""
	for memberID == "" || members[memberID] {
		memberID = strconv.FormatUint(uint64(rand.Uint32()|1), 10)
	}
	for _, component := range staticPods {
		pod := staticPod(component, node)
		if component == "etcd" {
			pod.Annotations[cloudv1.EtcdClusterIDAnnotationName] = clusterID
			pod.Annotations[cloudv1.EtcdMemberIDAnnotationName] = memberID
			if !haveLeader {
				pod.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = time.Now().Format(time.RFC3339)
			}
		}
		if err := createIfMissing(ctx, c, pod); err != nil {
			return err
		}
	}
	return nil
}

// staticPod is the mirror pod the kubelet posts for a static pod of kubeadm's: the mirror
// annotation is what drains (Cluster API's among them) look for to leave it alone.
func staticPod(component, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: component + "-" + node,
			Labels: map[string]string{"component": component, "tier": "control-plane"},
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: component + "-" + node,
				"kubernetes.io/config.source": "file"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: component, Image: "registry.k8s.io/" + component}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// stopControlPlane removes the host's static pods (the etcd member with them).
func stopControlPlane(ctx context.Context, c inmemoryruntime.Client, node string) error {
	for _, component := range staticPods {
		if err := c.Delete(ctx, staticPod(component, node)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// kubeadmInitObjects are what kubeadm init leaves in the cluster besides the control plane: the
// kubeadm-config ConfigMap (the ClusterConfiguration KCP reads and updates), the RBAC joining
// nodes use, kube-proxy and CoreDNS.
func kubeadmInitObjects(b *Boot) []client.Object {
	image := func(name, version string) []corev1.Container {
		return []corev1.Container{{Name: name, Image: "registry.k8s.io/" + name + ":" + version}}
	}
	objs := []client.Object{}
	// The namespaces every cluster starts with (Cluster API's drain looks its pods' namespaces up).
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	return append(objs,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"},
			Data: map[string]string{"ClusterConfiguration": b.ClusterConfiguration}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeadm:get-nodes"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-proxy", Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: image("kube-proxy", b.KubernetesVersion)}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns"},
			Data: map[string]string{"Corefile": ".:53 {\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n    forward . /etc/resolv.conf\n}\n"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns", Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.1"}}}}}},
	)
}

// clusterKubernetesVersion is the version kubeadm join installs the kubelet configuration for:
// the one in the cluster's kubeadm-config ClusterConfiguration (KCP raises it on upgrades).
func clusterKubernetesVersion(ctx context.Context, c inmemoryruntime.Client) string {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"}, cm); err != nil {
		return ""
	}
	docs, _, err := kubeadmDocs(cm.Data["ClusterConfiguration"], "kubeadm-config")
	if err != nil || len(docs) == 0 {
		return ""
	}
	return docs[0].KubernetesVersion
}

// bootstrapTokenValid checks a join's token as the API server's bootstrap authenticator does:
// a kube-system Secret bootstrap-token-<id> of type bootstrap.kubernetes.io/token with that
// secret, usable for authentication and not expired.
func bootstrapTokenValid(ctx context.Context, c inmemoryruntime.Client, token string) bool {
	id, secret, ok := splitToken(token)
	if !ok {
		return false
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, s); err != nil {
		return false
	}
	if string(s.Data["token-secret"]) != secret || string(s.Data["usage-bootstrap-authentication"]) != "true" {
		return false
	}
	if exp := string(s.Data["expiration"]); exp != "" {
		if t, err := time.Parse(time.RFC3339, exp); err == nil && time.Now().After(t) {
			return false
		}
	}
	return true
}

func splitToken(token string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(token, ".")
	return id, secret, ok && len(id) == 6 && len(secret) == 16
}

package kubetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fiomig/fiomig/internal/kubetest"
)

func clientset(t *testing.T, c *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestControlPlane starts the real etcd + kube-apiserver once and checks
// what the kube backend's tests rely on: the version built, RBAC enforced
// for users and ServiceAccounts, and the CRDs of deploy/crds/ served with
// their schema enforced.
func TestControlPlane(t *testing.T) {
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := clientset(t, env.Config)

	t.Run("version", func(t *testing.T) {
		v, err := admin.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != kubetest.KubeVersion {
			t.Errorf("server version %s, want %s (build-bins.sh)", v.GitVersion, kubetest.KubeVersion)
		}
	})

	ns := "rbac"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// alice may read ConfigMaps in ns, nothing else.
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("rbac-user", func(t *testing.T) {
		alice := clientset(t, env.Impersonate("alice"))
		// The binding was just created: the RBAC authorizer sees it once its
		// informer has the watch event (a CI run at load 3 was refused once).
		if err := grantedWithin(ctx, func() error {
			_, err := alice.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
			return err
		}); err != nil {
			t.Errorf("alice get configmap (granted): %v", err)
		}
		if err := alice.CoreV1().ConfigMaps(ns).Delete(ctx, "cm", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice delete configmap (not granted): err %v, want Forbidden", err)
		}
		if _, err := alice.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice list secrets (not granted): err %v, want Forbidden", err)
		}
		if _, err := alice.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice get configmap in another namespace: err %v, want Forbidden", err)
		}
		// The ConfigMap is still there: the denied delete did nothing.
		if _, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{}); err != nil {
			t.Errorf("configmap after alice's denied delete: %v", err)
		}
	})

	t.Run("rbac-serviceaccount", func(t *testing.T) {
		sa := clientset(t, env.ServiceAccount(ns, "nobody"))
		if _, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("unbound ServiceAccount list pods: err %v, want Forbidden", err)
		} else if !strings.Contains(err.Error(), "system:serviceaccount:rbac:nobody") {
			t.Errorf("Forbidden error does not name the ServiceAccount: %v", err)
		}
		// Bound to a Role, the same ServiceAccount may.
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nobody"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nobody", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := grantedWithin(ctx, func() error {
			_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}); err != nil {
			t.Fatalf("bound ServiceAccount list configmaps: %v", err)
		}
	})

	t.Run("crds", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			t.Fatal(err)
		}
		vm := dyn.Resource(schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "volumemigrations"}).Namespace(ns)
		obj := func(spec map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "VolumeMigration",
				"metadata": map[string]any{"name": "m1"}, "spec": spec}}
		}
		if _, err := vm.Create(ctx, obj(map[string]any{"targetNodeUUID": "n"}), metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pvName") {
			t.Errorf("VolumeMigration without pvName: err %v, want Invalid naming pvName", err)
		}
		created, err := vm.Create(ctx, obj(map[string]any{"pvName": "pv-1", "targetNodeUUID": "n"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("valid VolumeMigration: %v", err)
		}
		created.Object["spec"].(map[string]any)["pvName"] = "pv-2"
		if _, err := vm.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("changing pvName: err %v, want Invalid (immutable)", err)
		}
		cur, err := vm.Get(ctx, "m1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"] = map[string]any{"phase": "Sleeping"}
		if _, err := vm.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("status.phase Sleeping: err %v, want Invalid (enum)", err)
		}
		// The chart's CRD requires transport in each connection.
		cur.Object["status"] = map[string]any{"phase": "Validating", "memberCount": int64(1),
			"connections": []any{map[string]any{"nqn": "nqn.x", "ip": "10.0.0.1", "port": int64(4426)}}}
		if _, err := vm.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "transport") {
			t.Errorf("connection without transport: err %v, want Invalid naming transport", err)
		}
		cur.Object["status"] = map[string]any{"phase": "Validating", "memberCount": int64(1),
			"connections": []any{map[string]any{"nqn": "nqn.x", "ip": "10.0.0.1", "port": int64(4426), "transport": "tcp"}}}
		if _, err := vm.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Errorf("valid status: %v", err)
		}
		// StorageNodeSet: spec.clusterName required; a node entry without
		// uuid (the operator's placeholder while a node is created) valid.
		nodeSets := dyn.Resource(schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storagenodesets"}).Namespace(ns)
		set := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "StorageNodeSet",
			"metadata": map[string]any{"name": "s1"}, "spec": map[string]any{}}}
		if _, err := nodeSets.Create(ctx, set, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "clusterName") {
			t.Errorf("StorageNodeSet without clusterName: err %v, want Invalid naming clusterName", err)
		}
		set.Object["spec"] = map[string]any{"clusterName": "c"}
		createdSet, err := nodeSets.Create(ctx, set, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("valid StorageNodeSet: %v", err)
		}
		createdSet.Object["status"] = map[string]any{"nodes": []any{map[string]any{"hostname": "w1", "mgmtIp": "192.168.0.1", "status": "in_creation"}}}
		if _, err := nodeSets.UpdateStatus(ctx, createdSet, metav1.UpdateOptions{}); err != nil {
			t.Errorf("placeholder node entry without uuid: %v", err)
		}
		// StorageCluster: spec with maxSubsystemCount (10..75) and vcpuCount (>= 6) required.
		clusters := dyn.Resource(schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storageclusters"}).Namespace(ns)
		sc := func(spec map[string]any) *unstructured.Unstructured {
			o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "StorageCluster",
				"metadata": map[string]any{"name": "c1"}}}
			if spec != nil {
				o.Object["spec"] = spec
			}
			return o
		}
		for _, bad := range []map[string]any{nil, {"maxSubsystemCount": int64(50)}, {"maxSubsystemCount": int64(50), "vcpuCount": int64(4)}} {
			if _, err := clusters.Create(ctx, sc(bad), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("StorageCluster spec %v: err %v, want Invalid", bad, err)
			}
		}
		if _, err := clusters.Create(ctx, sc(map[string]any{"maxSubsystemCount": int64(50), "vcpuCount": int64(8)}), metav1.CreateOptions{}); err != nil {
			t.Errorf("valid StorageCluster: %v", err)
		}
		// RBAC covers custom resources too: alice may not read them.
		aliceDyn, err := dynamic.NewForConfig(env.Impersonate("alice"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := aliceDyn.Resource(schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "volumemigrations"}).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice list volumemigrations: err %v, want Forbidden", err)
		}
	})
}

// grantedWithin retries call while the API server answers Forbidden, for
// up to 30 s: a Role or RoleBinding just created takes effect when the
// RBAC authorizer's informer cache has it (kube-apiserver's RBAC
// authorizer reads listers, not etcd). Any other error, or Forbidden at
// the deadline, is returned.
func grantedWithin(ctx context.Context, call func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = call()
		if apierrors.IsForbidden(last) {
			return false, nil
		}
		return true, last
	})
	if last != nil {
		return last
	}
	return err
}

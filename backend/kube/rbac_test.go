package kube_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/internal/kubetest"
)

// applyDeploy creates the simplyblock namespace (its Role needs it) and
// every manifest of deploy/rbac/ and deploy/agent/ with the admin config.
func applyDeploy(t *testing.T, env *kubetest.Env) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	for _, ns := range []string{"simplyblock"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	agent, _ := filepath.Glob(filepath.Join(root, "deploy", "agent", "*.yaml"))
	if len(files) < 3 || len(agent) < 1 {
		t.Fatalf("deploy/rbac and deploy/agent manifests missing: %v %v", files, agent)
	}
	if err := kube.ApplyManifests(ctx, env.Config, append(files, agent...)...); err != nil {
		t.Fatal(err)
	}
	waitForBindings(t, cs)
}

// waitForBindings waits, up to 30 s, until the RBAC authorizer grants
// each ServiceAccount subject of the fiomig Role- and ClusterRoleBindings
// the first rule of its role: the authorizer reads informer caches, so a
// binding just created is refused for a moment (kubetest's rbac-user case
// was refused once in CI at load 3). A grant the tests expect would
// otherwise fail by that race, not by the manifests.
func waitForBindings(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	type grant struct {
		sa   rbacv1.Subject
		ns   string
		rule rbacv1.PolicyRule
	}
	var grants []grant
	add := func(ns string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		var rules []rbacv1.PolicyRule
		if ref.Kind == "Role" {
			r, err := cs.RbacV1().Roles(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rules = r.Rules
		} else {
			r, err := cs.RbacV1().ClusterRoles().Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rules = r.Rules
		}
		for _, sub := range subjects {
			if sub.Kind == "ServiceAccount" && len(rules) > 0 {
				grants = append(grants, grant{sub, ns, rules[0]})
			}
		}
	}
	for _, ns := range []string{"fiomig", "simplyblock"} {
		rbs, err := cs.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rb := range rbs.Items {
			add(ns, rb.RoleRef, rb.Subjects)
		}
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crb := range crbs.Items {
		if strings.HasPrefix(crb.Name, "fiomig-") {
			add("", crb.RoleRef, crb.Subjects)
		}
	}
	for _, g := range grants {
		user := "system:serviceaccount:" + g.sa.Namespace + ":" + g.sa.Name
		res, sub, _ := strings.Cut(g.rule.Resources[0], "/")
		a := &authzv1.ResourceAttributes{Namespace: g.ns, Verb: g.rule.Verbs[0], Group: g.rule.APIGroups[0], Resource: res, Subresource: sub}
		if len(g.rule.ResourceNames) > 0 {
			a.Name = g.rule.ResourceNames[0]
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + g.sa.Namespace, "system:authenticated"}, ResourceAttributes: a}}, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed, err
		})
		if err != nil {
			t.Fatalf("RBAC authorizer never granted %s %s %s/%s in %q: %v", user, a.Verb, a.Group, a.Resource, a.Namespace, err)
		}
	}
	if len(grants) == 0 {
		t.Fatal("no fiomig role binding with a ServiceAccount subject found after applying deploy/rbac")
	}
}

// writes are the verbs that create, change or delete something.
var writes = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// reviewAPIs are the self-review resources every authenticated user may
// "create" (system:basic-user): asking what one may do stores nothing.
func reviewAPI(r authzv1.ResourceRule) bool {
	for _, g := range r.APIGroups {
		if g != "authorization.k8s.io" && g != "authentication.k8s.io" {
			return false
		}
	}
	for _, res := range r.Resources {
		if res != "selfsubjectaccessreviews" && res != "selfsubjectrulesreviews" && res != "selfsubjectreviews" {
			return false
		}
	}
	return true
}

func rules(t *testing.T, cfg *rest.Config, ns string) []authzv1.ResourceRule {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Incomplete {
		t.Fatalf("rules review in %s incomplete: %s", ns, r.Status.EvaluationError)
	}
	return r.Status.ResourceRules
}

func allowed(t *testing.T, cfg *rest.Config, a authzv1.ResourceAttributes) bool {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// TestAgentCanWriteNothing: the agent's ServiceAccount, as the RBAC
// authorizer of a real kube-apiserver sees it, holds no rule with a write
// verb in any namespace (bar the self-reviews every user has), and its
// attempts to create and delete are refused.
func TestAgentCanWriteNothing(t *testing.T) {
	env := kubetest.Start(t)
	if env == nil {
		return
	}
	applyDeploy(t, env)
	agentCfg := env.ServiceAccount("fiomig", "fiomig-agent")
	for _, ns := range []string{"fiomig", "simplyblock", "default", "kube-system"} {
		for _, r := range rules(t, agentCfg, ns) {
			if reviewAPI(r) {
				continue
			}
			for _, v := range r.Verbs {
				if slices.Contains(writes, v) {
					t.Errorf("agent may %s %v/%v in namespace %s", v, r.APIGroups, r.Resources, ns)
				}
			}
		}
	}
	// The attempts themselves, against objects that exist.
	admin := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "fiomig"}}
	if _, err := admin.CoreV1().ConfigMaps("fiomig").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := kubernetes.NewForConfigOrDie(agentCfg)
	_, err := as.CoreV1().ConfigMaps("fiomig").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "fiomig"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("agent creating a ConfigMap: err = %v, want Forbidden", err)
	}
	if err := as.CoreV1().ConfigMaps("fiomig").Delete(ctx, "victim", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent deleting a ConfigMap: err = %v, want Forbidden", err)
	}
	if err := as.AppsV1().DaemonSets("fiomig").Delete(ctx, "fiomig-agent", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("agent deleting its DaemonSet: err = %v, want Forbidden", err)
	}
	// The check can fail: the harness's account may create pods.
	if !allowed(t, env.ServiceAccount("fiomig", "fiomig-harness"), authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "create", Resource: "pods"}) {
		t.Error("harness may not create pods: the manifests were not applied")
	}
}

// TestHarnessCannotReadSecrets: the harness's ServiceAccount may not get,
// list or watch Secrets in its own namespace, simplyblock's or
// kube-system, and a real read is refused.
func TestHarnessCannotReadSecrets(t *testing.T) {
	env := kubetest.Start(t)
	if env == nil {
		return
	}
	applyDeploy(t, env)
	h := env.ServiceAccount("fiomig", "fiomig-harness")
	for _, ns := range []string{"fiomig", "simplyblock", "kube-system", "default"} {
		for _, verb := range []string{"get", "list", "watch"} {
			if allowed(t, h, authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "secrets"}) {
				t.Errorf("harness may %s secrets in %s", verb, ns)
			}
		}
	}
	admin := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "simplyblock"}, StringData: map[string]string{"k": "v"}}
	if _, err := admin.CoreV1().Secrets("simplyblock").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hs := kubernetes.NewForConfigOrDie(h)
	if _, err := hs.CoreV1().Secrets("simplyblock").Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("harness reading a Secret: err = %v, want Forbidden", err)
	}
	// What it needs, it has (the kube suite runs as this account too).
	for _, a := range []authzv1.ResourceAttributes{
		{Namespace: "simplyblock", Verb: "create", Group: "storage.simplyblock.io", Resource: "volumemigrations"},
		{Namespace: "fiomig", Verb: "get", Resource: "pods", Subresource: "proxy"},
		{Namespace: "simplyblock", Verb: "delete", Resource: "pods"},
		{Verb: "list", Resource: "nodes"},
	} {
		if !allowed(t, h, a) {
			t.Errorf("harness may not %s %s/%s in %q", a.Verb, a.Resource, a.Subresource, a.Namespace)
		}
	}
}

// TestHarnessRBACFollowsTheOperatorsNamespaces: the harness may create
// VolumeMigrations and delete the operator's Jobs only in the
// StorageCluster's namespace (simplyblock), where the operator works on
// them; it reaches the control plane by port-forward there, which carries
// the cluster secret, and has no pod proxy there (which would strip it);
// in its own namespace it keeps the pod proxy for its agents and pods, and
// a farm's Jobs and its pods' logs, but no VolumeMigrations. As the RBAC authorizer of a real
// kube-apiserver decides.
func TestHarnessRBACFollowsTheOperatorsNamespaces(t *testing.T) {
	env := kubetest.Start(t)
	if env == nil {
		return
	}
	applyDeploy(t, env)
	h := env.ServiceAccount("fiomig", "fiomig-harness")
	for _, tc := range []struct {
		a    authzv1.ResourceAttributes
		want bool
	}{
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "create", Group: "storage.simplyblock.io", Resource: "volumemigrations"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "watch", Group: "storage.simplyblock.io", Resource: "volumemigrations"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "patch", Group: "storage.simplyblock.io", Resource: "volumemigrations"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "list", Group: "storage.simplyblock.io", Resource: "storageclusters"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "delete", Group: "batch", Resource: "jobs"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "create", Resource: "pods", Subresource: "portforward"}, true},
		{authzv1.ResourceAttributes{Verb: "get", Group: "storage.k8s.io", Resource: "storageclasses"}, true},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "get", Resource: "pods", Subresource: "proxy"}, false},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "create", Resource: "pods", Subresource: "exec"}, false},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "create", Resource: "pods"}, false},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "create", Group: "batch", Resource: "jobs"}, false},
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "create", Group: "storage.simplyblock.io", Resource: "volumemigrations"}, false},
		// A farm's Indexed Job and its pods' logs (docs/farm.md).
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "create", Group: "batch", Resource: "jobs"}, true},
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "delete", Group: "batch", Resource: "jobs"}, true},
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "get", Resource: "pods", Subresource: "log"}, true},
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "update", Group: "batch", Resource: "jobs"}, false},
		{authzv1.ResourceAttributes{Namespace: "simplyblock", Verb: "get", Resource: "pods", Subresource: "log"}, false},
		{authzv1.ResourceAttributes{Namespace: "fiomig", Verb: "create", Resource: "pods", Subresource: "portforward"}, false},
	} {
		if got := allowed(t, h, tc.a); got != tc.want {
			t.Errorf("harness may %s %s/%s %s in %q: %v, want %v", tc.a.Verb, tc.a.Group, tc.a.Resource, tc.a.Subresource, tc.a.Namespace, got, tc.want)
		}
	}
}

package suites_test

import (
	"bytes"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fiomig/fiomig/backend/kube"
)

var _ = Describe("fiomig janitor on Kubernetes", Label("kube", "janitor"), func() {
	It("removes what a dead run left and keeps a live run's objects", func(ctx SpecContext) {
		env := kubeEnv()
		admin := kubernetes.NewForConfigOrDie(env.Admin)
		dyn := dynamic.NewForConfigOrDie(env.Admin)
		const dead, live = "fiomig-1-dead", "fiomig-2-live"
		labels := func(run, role string) map[string]string {
			return map[string]string{kube.LabelRun: run, kube.LabelRole: role, kube.LabelManagedBy: "fiomig"}
		}
		lease := func(run string, renewed time.Time) *coordv1.Lease {
			t := metav1.NewMicroTime(renewed)
			return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: run, Namespace: "fiomig", Labels: labels(run, "lease")},
				Spec: coordv1.LeaseSpec{RenewTime: &t}}
		}
		// Planted leftovers of a run killed 10 minutes ago (its Lease stale).
		_, err := admin.CoordinationV1().Leases("fiomig").Create(ctx, lease(dead, time.Now().Add(-10*time.Minute)), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = admin.CoreV1().ConfigMaps("fiomig").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: dead + "-fio-jobs", Namespace: "fiomig", Labels: labels(dead, "jobs")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		sc := "no-such-class" // never bound: a PVC left Pending
		_, err = admin.CoreV1().PersistentVolumeClaims("fiomig").Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: dead + "-pvc-1", Namespace: "fiomig", Labels: labels(dead, "pvc")},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &sc,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = admin.CoreV1().Pods("fiomig").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: dead + "-fio-1", Namespace: "fiomig", Labels: labels(dead, "fio")},
			Spec:       corev1.PodSpec{NodeName: env.StandIn.NodeNames()[0], Containers: []corev1.Container{{Name: "fio", Image: "alpine:3"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// VolumeMigrations live in the StorageCluster's namespace.
		sns := env.StandIn.StorageNamespace()
		vm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "VolumeMigration",
			"metadata": map[string]any{"name": dead + "-mig-1", "namespace": sns},
			"spec":     map[string]any{"pvName": "pv-gone", "targetNodeUUID": "00000000-0000-4000-8000-000000000000"},
		}}
		vm.SetLabels(labels(dead, "migration"))
		_, err = dyn.Resource(kube.GVRVolumeMigration).Namespace(sns).Create(ctx, vm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// A live run: renewed just now.
		_, err = admin.CoordinationV1().Leases("fiomig").Create(ctx, lease(live, time.Now()), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = admin.CoreV1().ConfigMaps("fiomig").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: live + "-fio-jobs", Namespace: "fiomig", Labels: labels(live, "jobs")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			admin.CoordinationV1().Leases("fiomig").Delete(ctx, live, metav1.DeleteOptions{})
			admin.CoreV1().ConfigMaps("fiomig").Delete(ctx, live+"-fio-jobs", metav1.DeleteOptions{})
		})

		var out bytes.Buffer
		// As the harness account: deploy/rbac grants what the janitor needs.
		removed, err := kube.Janitor(ctx, kube.JanitorConfig{REST: env.Harness, Namespace: "fiomig",
			StorageNamespace: env.StandIn.StorageNamespace()}, &out)
		Expect(err).NotTo(HaveOccurred(), out.String())
		AddReportEntry("janitor output", out.String())
		var names []string
		for _, r := range removed {
			Expect(r.Run).To(Equal(dead), "removed %s of another run", r)
			names = append(names, r.Kind+" "+r.Name)
		}
		Expect(names).To(ContainElements("Lease "+dead, "ConfigMap "+dead+"-fio-jobs", "PersistentVolumeClaim "+dead+"-pvc-1",
			"Pod "+dead+"-fio-1", "VolumeMigration "+dead+"-mig-1"))
		Expect(out.String()).To(ContainSubstring("removed Pod fiomig/" + dead + "-fio-1 (run " + dead + ")"))
		Expect(env.Labelled(ctx, dead)).To(BeEmpty())
		Expect(env.Labelled(ctx, live)).To(ConsistOf("Lease fiomig/"+live, "ConfigMap fiomig/"+live+"-fio-jobs"))
	})
})

package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A farm is a sweep's seeds run as one Indexed Job (docs/farm.md): index
// i of Shards runs shard i of the seeds in a pod of the fiomig image and
// prints each seed's result on its stdout, which the harness reads back as
// the pod's log. Everything is labelled with the farm's run id, and a
// Lease of that name says the harness is alive (Janitor).

// FarmContainer is the name of the farm pods' one container.
const FarmContainer = "shard"

// AnnotationFarm holds, on the farm's Job, the sweep's settings as JSON
// (what fiomig sweep --attach rebuilds the sweep from).
const AnnotationFarm = "fiomig.io/sweep"

// FarmJob is one farm's Job.
type FarmJob struct {
	// Namespace and RunID place and label it (RunID also names the Job
	// and the Lease).
	Namespace, RunID string
	// Image is the fiomig image (its entry point fiomig); Args the
	// container's arguments.
	Image string
	Args  []string
	// Env is added to the container's environment.
	Env []corev1.EnvVar
	// Shards is the number of indexes (completions), Parallelism how many
	// pods run at once.
	Shards, Parallelism int
	// Settings is the AnnotationFarm value.
	Settings string
}

// Farm retries and failure policy (docs/farm.md): an index may fail
// FarmBackoffPerIndex times before the farm fails; a pod ended by a
// disruption (eviction, preemption, a drained or lost node: the pod
// condition DisruptionTarget) does not count; exit 2 (bad usage) fails its
// index at once, since a retry would be refused the same way.
const FarmBackoffPerIndex = 2

// FarmJobObject is j as a batch/v1 Job: completionMode Indexed,
// backoffLimitPerIndex, maxFailedIndexes 0 (one index failing for good
// fails the Job), a pod failure policy that ignores disruptions and fails
// the index on exit 2, pods that run the image as uid 65534 on a read-only
// root with an emptyDir for the runs, no API token, one CPU and 256 MiB
// requested (one seed at a time, GOMAXPROCS 1: a seed peaks at ~115 MiB
// resident), and the Job and its pods removed a day after it finished
// should no harness delete it.
func FarmJobObject(j FarmJob) *batchv1.Job {
	indexed := batchv1.IndexedCompletion
	completions, parallelism := int32(j.Shards), int32(j.Parallelism)
	backoff, maxFailed := int32(FarmBackoffPerIndex), int32(0)
	ttl := int32(24 * 3600)
	yes, no, uid := true, false, int64(65534)
	labels := runLabels(j.RunID, "farm")
	env := append([]corev1.EnvVar{{Name: "GOMAXPROCS", Value: "1"}, {Name: "TMPDIR", Value: "/work"}}, j.Env...)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.RunID, Namespace: j.Namespace, Labels: labels,
			Annotations: map[string]string{AnnotationFarm: j.Settings}},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed, Completions: &completions, Parallelism: &parallelism,
			BackoffLimitPerIndex: &backoff, MaxFailedIndexes: &maxFailed,
			TTLSecondsAfterFinished: &ttl,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr(FarmContainer), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2}}},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
					TerminationGracePeriodSeconds: ptr(int64(10)), EnableServiceLinks: &no,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid},
					Containers: []corev1.Container{{
						Name: FarmContainer, Image: j.Image, ImagePullPolicy: corev1.PullIfNotPresent, Args: j.Args, Env: env,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
						SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Farm is a farm's Job on a cluster: the harness's handle to create it,
// follow its pods and remove it.
type Farm struct {
	cs        kubernetes.Interface
	ns, runID string
}

// FarmClient connects to the cluster of kubeconfig (or rc, when not nil)
// for the farm runID in namespace ns. Its errors wrap ErrUnreachable.
func FarmClient(ctx context.Context, kubeconfig string, rc *rest.Config, ns, runID string) (*Farm, error) {
	rc, _, err := Connect(ctx, Config{Kubeconfig: kubeconfig, REST: rc})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Farm{cs: cs, ns: ns, runID: runID}, nil
}

// RunID is the farm's run id.
func (f *Farm) RunID() string { return f.runID }

// Create creates the farm's Lease, then its Job (FarmJobObject); on an
// error it removes what it created.
func (f *Farm) Create(ctx context.Context, j FarmJob) error {
	if err := f.RenewLease(ctx); err != nil {
		return err
	}
	if _, err := f.cs.BatchV1().Jobs(f.ns).Create(ctx, FarmJobObject(j), metav1.CreateOptions{}); err != nil {
		return errors.Join(fmt.Errorf("kube: create Job %s/%s: %w", f.ns, f.runID, err), f.Delete(context.WithoutCancel(ctx)))
	}
	return nil
}

// RenewLease creates or renews the farm's Lease (named by its run id):
// while it is renewed within JanitorConfig.Stale, Janitor leaves the farm
// alone.
func (f *Farm) RenewLease(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	leases := f.cs.CoordinationV1().Leases(f.ns)
	l, err := leases.Get(ctx, f.runID, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		holder, dur := f.runID, int32(leaseDurationS)
		l = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: f.runID, Namespace: f.ns, Labels: runLabels(f.runID, "lease")},
			Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("kube: Lease %s/%s: %w", f.ns, f.runID, err)
	}
	return nil
}

// Job is the farm's Job as the API server has it.
func (f *Farm) Job(ctx context.Context) (*batchv1.Job, error) {
	j, err := f.cs.BatchV1().Jobs(f.ns).Get(ctx, f.runID, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: Job %s/%s: %w", f.ns, f.runID, err)
	}
	return j, nil
}

// Pods are the farm's pods, every attempt of every index, by creation.
func (f *Farm) Pods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metaList(LabelRun+"="+f.runID))
	if err != nil {
		return nil, fmt.Errorf("kube: list the farm's pods: %w", err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return l.Items, nil
}

// Logs streams pod's log from its start (follow: until the container ends).
func (f *Farm) Logs(ctx context.Context, pod string, follow bool) (io.ReadCloser, error) {
	return f.cs.CoreV1().Pods(f.ns).GetLogs(pod, &corev1.PodLogOptions{Container: FarmContainer, Follow: follow}).Stream(ctx)
}

// PodIndex is the completion index of a farm pod (-1 if it has none).
func PodIndex(p corev1.Pod) int {
	i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil {
		return -1
	}
	return i
}

// JobFinished says whether j is Complete or Failed, and why it failed.
func JobFinished(j *batchv1.Job) (done bool, failed string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, ""
		case batchv1.JobFailed:
			return true, fmt.Sprintf("%s: %s (failed indexes %s)", c.Reason, c.Message, ptrOr(j.Status.FailedIndexes))
		}
	}
	return false, ""
}

func ptrOr(s *string) string {
	if s == nil || *s == "" {
		return "none"
	}
	return *s
}

// Delete removes the farm's Job (its pods with it) and its Lease and waits
// up to 2 min until no pod of the farm is left. It works after ctx's
// parent was cancelled (SIGINT) and is idempotent.
func (f *Farm) Delete(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	var errs []error
	if err := f.cs.BatchV1().Jobs(f.ns).Delete(ctx, f.runID, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: delete Job %s/%s: %w", f.ns, f.runID, err))
	}
	for {
		pods, err := f.Pods(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				// The garbage collector deletes them too; at once is faster.
				f.cs.CoreV1().Pods(f.ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
		}
		if len(pods) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("kube: %d pod(s) of farm %s still there after 2 min", len(pods), f.runID))
			return errors.Join(errs...)
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := f.cs.CoordinationV1().Leases(f.ns).Delete(ctx, f.runID, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: delete Lease %s/%s: %w", f.ns, f.runID, err))
	}
	return errors.Join(errs...)
}

package kube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

// Labels and annotations fiomig puts on the objects it creates (the seam
// contract with the stand-in, and what kube.Janitor searches by).
const (
	// LabelRun carries the run id on every object a run creates.
	LabelRun = "fiomig.io/run"
	// LabelRole says what the object is for: fio, pvc, jobs, migration,
	// nft-helper, nft-sweep, lease.
	LabelRole = "fiomig.io/role"
	// LabelManagedBy is app.kubernetes.io/managed-by=fiomig.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelConsumer marks the Nodes that are consumer hosts (=true).
	LabelConsumer = "fiomig.io/consumer"
	// LabelAgent selects the agent DaemonSet's pods (=fiomig-agent).
	LabelAgent = "app.kubernetes.io/name"
	// AgentName is the value of LabelAgent on agent pods.
	AgentName = "fiomig-agent"
	// WorkloadServiceAccount runs the pods a run creates (fio, nft
	// helpers): no token, no API access (deploy/rbac/harness.yaml); on
	// OpenShift it holds their SCCs (deploy/openshift/).
	WorkloadServiceAccount = "fiomig-workload"

	AnnotationNFTIP    = "fiomig.io/nft-ip"
	AnnotationNFTPort  = "fiomig.io/nft-port"
	AnnotationNFTTable = "fiomig.io/nft-table"
	AnnotationNFTKeep  = "fiomig.io/nft-keep"

	// AnnotationNFTPort lists the dropped ports, comma-separated.

	// Storage-side labels set by simplyblock (docs/kube.md).
	labelSPDKRole       = "role=simplyblock-storage-node"
	labelControlPlane   = "app=simplyblock-webappapi"
	controlPlanePort    = 5000
	labelHostname       = "kubernetes.io/hostname"
	csiDriver           = "csi.simplyblock.io"
	nqnPrefix           = "nqn.2023-02.io.simplyblock:"
	validateJobPrefix   = "vmig-validate-"
	defaultHelperImage  = "ghcr.io/fiomig/fiomig:latest"
	defaultFioImage     = "ghcr.io/fiomig/fio:3.33-3" // make images: Debian bookworm's fio
	defaultVolumeSize   = "1Gi"
	defaultNamespace    = "fiomig"
	defaultStorageNS    = "simplyblock"
	defaultSetupTimeout = 5 * time.Minute
)

// GVRs of simplyblock's custom resources (docs/sources.md §5.1, §10.1).
var (
	GVRVolumeMigration = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "volumemigrations"}
	GVRStorageNodeSet  = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storagenodesets"}
	GVRStorageCluster  = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storageclusters"}
)

// metaList lists by label selector sel.
func metaList(sel string) metav1.ListOptions { return metav1.ListOptions{LabelSelector: sel} }

// NewRunID makes a run id "fiomig-<unix seconds>-<4 hex>" (DNS-1123, so it
// can prefix object names and be a label value).
func NewRunID(now time.Time) string {
	b := make([]byte, 2)
	rand.Read(b)
	return fmt.Sprintf("fiomig-%d-%s", now.Unix(), hex.EncodeToString(b))
}

// runLabels are the labels of every object of run id with role.
func runLabels(id, role string) map[string]string {
	return map[string]string{LabelRun: id, LabelRole: role, LabelManagedBy: "fiomig"}
}

// nftTable is the nftables table name of run id: "fiomig_" + the id with
// '-' as '_' (nft identifiers take no '-').
func nftTable(id string) string {
	return "fiomig_" + strings.ReplaceAll(strings.TrimPrefix(id, "fiomig-"), "-", "_")
}

func pvcObject(ns, name, id, sc, size string) (*corev1.PersistentVolumeClaim, error) {
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return nil, fmt.Errorf("volume size %q: %w", size, err)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: runLabels(id, "pvc")},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
	}, nil
}

// fioPod is one volume's fio pod, pinned to host by a required node
// affinity on kubernetes.io/hostname (as the seed harness pins its fio
// pods), running the ConfigMap's job file with its logs in an emptyDir
// that the read-only "logs" sidecar serves (agent.FilesHandler).
func fioPod(ns, name, id, pvc, host, jobs, jobKey, fioImage, helperImage string) *corev1.Pod {
	grace := int64(fioGraceS)
	ro := true
	// The file names are workload.FilesIn's, so that scenario.FioEvaluate
	// reads what CollectFio brings back exactly as a local fio run's.
	// Deleting the pod stops fio (SIGTERM -> SIGINT to fio, which then
	// writes its result and per-I/O log); the logs sidecar keeps serving
	// for --linger while the pod terminates, so StopFio can fetch them.
	script := fmt.Sprintf("cp /jobs/%s /logs/job.fio; command -v fio >/dev/null || apk add --no-cache fio >/dev/null || { echo 90 >/logs/fio.rc; exit 90; }; "+
		"cd /logs; fio --output-format=json+ --output=/logs/result.json /logs/job.fio >/logs/stdout.txt 2>/logs/stderr.txt & FIO=$!; "+
		"trap 'kill -INT $FIO; wait $FIO; echo $? >/logs/fio.rc; exit 0' TERM; "+
		"wait $FIO; echo $? >/logs/fio.rc; while :; do sleep 3600 & wait $!; done", jobKey)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: runLabels(id, "fio")},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            WorkloadServiceAccount,
			AutomountServiceAccountToken:  new(bool),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
				}}},
			}},
			Containers: []corev1.Container{
				{
					Name: "fio", Image: fioImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Command:    []string{"sh", "-c", script},
					WorkingDir: "/data",
					VolumeMounts: []corev1.VolumeMount{
						{Name: "data", MountPath: "/data"}, {Name: "logs", MountPath: "/logs"},
						{Name: "jobs", MountPath: "/jobs", ReadOnly: true},
					},
				},
				{
					Name: "logs", Image: helperImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Args:            []string{"logserve", "--dir", "/logs", "--listen", fmt.Sprintf(":%d", agent.FilesPort), "--linger", fmt.Sprintf("%ds", fioGraceS-5)},
					Ports:           []corev1.ContainerPort{{Name: "logs", ContainerPort: agent.FilesPort}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "logs", MountPath: "/logs", ReadOnly: true}},
					SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &ro, AllowPrivilegeEscalation: new(bool)},
				},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "jobs", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: jobs}}}},
			},
		},
	}
}

// fioGraceS is the fio pods' termination grace period, seconds: time for
// fio to stop and for StopFio to fetch its files.
const fioGraceS = 90

// nftHelperPod drops new TCP connections to ip at ports on node (hostNetwork,
// privileged and as root: nftables needs CAP_NET_ADMIN in the host's
// network namespace, which a privileged container's non-root user — the
// fiomig image's 65534 — does not hold); it exists only while the fault
// does, and deletes its table when it is stopped (SIGTERM).
func nftHelperPod(ns, name, id, node, ip string, ports []int, image string) *corev1.Pod {
	priv, root := true, int64(0)
	grace := int64(10)
	table := nftTable(id)
	ps := make([]string, len(ports))
	for i, p := range ports {
		ps[i] = fmt.Sprint(p)
	}
	port := strings.Join(ps, ",")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: runLabels(id, "nft-helper"),
			Annotations: map[string]string{AnnotationNFTIP: ip, AnnotationNFTPort: port, AnnotationNFTTable: table}},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            WorkloadServiceAccount, AutomountServiceAccountToken: new(bool),
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "nft", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"nft-helper", "--table", table, "--ip", ip, "--port", port,
					"--listen", fmt.Sprintf(":%d", agent.HelperPort)},
				Ports:           []corev1.ContainerPort{{Name: "counter", ContainerPort: agent.HelperPort}},
				SecurityContext: &corev1.SecurityContext{Privileged: &priv, RunAsUser: &root, RunAsNonRoot: new(bool)},
			}},
		},
	}
}

// nftSweepPod deletes every fiomig_* table on node but those of keep.
func nftSweepPod(ns, name, node string, keep []string, image string) *corev1.Pod {
	priv, root := true, int64(0)
	grace := int64(5)
	labels := map[string]string{LabelRole: "nft-sweep", LabelManagedBy: "fiomig"}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{AnnotationNFTKeep: strings.Join(keep, ",")}},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            WorkloadServiceAccount, AutomountServiceAccountToken: new(bool),
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "nft", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"nft-helper", "--sweep", "fiomig_", "--keep", strings.Join(keep, ","),
					"--listen", fmt.Sprintf(":%d", agent.HelperPort)},
				Ports:           []corev1.ContainerPort{{Name: "counter", ContainerPort: agent.HelperPort}},
				SecurityContext: &corev1.SecurityContext{Privileged: &priv, RunAsUser: &root, RunAsNonRoot: new(bool)},
			}},
		},
	}
}

func volumeMigration(ns, name, id, pv, targetUUID string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storage.simplyblock.io/v1alpha1",
		"kind":       "VolumeMigration",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"pvName": pv, "targetNodeUUID": targetUUID},
	}}
	u.SetLabels(runLabels(id, "migration"))
	return u
}

package harness

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/record"
)

// FarmFile is the farm's own record in the sweep directory: where each
// seed ran, the pods, their CPU and wall time — everything of a farm that
// a local sweep of the same seeds does not have (sweep.json, sweep.md and
// the ECDF are the same bytes).
const FarmFile = "farm.json"

// FarmFlags are the flags of fiomig sweep and fiomig reproduce that say
// where and how a farm runs, not what it runs: left out of sweep.json's
// and reproduce.md's command, which is the local command that writes the
// same bytes.
var FarmFlags = []string{"on", "parallelism", "attach", "kubeconfig", "namespace", "helper-image"}

// maxShardTasks bounds the runs of one shard, whatever the parallelism,
// so that a pod's log stays far below the kubelet's rotation
// (containerLogMaxSize, 10 MiB by default; docs/farm.md): 200 lines of
// about 9 KB (a sweep's seed) to 23 KB (a run of fio-mig-1787159565).
const maxShardTasks = 200

// FarmOptions are where and how a farm runs (fiomig sweep --on kube,
// fiomig reproduce --on kube).
type FarmOptions struct {
	// On is --on: "kube" runs on a farm, "" here.
	On string
	// Kubeconfig (or REST, when set: tests) reaches the cluster.
	Kubeconfig string
	REST       *rest.Config
	// Namespace holds the Job, its pods and Lease (default "fiomig");
	// Image is the fiomig image the pods run.
	Namespace, Image string
	// Parallelism is how many pods run at once; Shards how many indexes
	// the runs are dealt to (0 = 4 × Parallelism, more when a shard would
	// hold over 200 runs; at most one per run).
	Parallelism, Shards int
	// Attach is the run id of a farm whose harness died: its sweep is
	// rebuilt from its Job (kube.AnnotationFarm) and followed to the end.
	Attach string
	// Command is the farm's own command line, for farm.json.
	Command string
}

// RegisterFarmFlags defines --on, --parallelism and --attach on fs, bound
// to f, for a command whose farm runs what ("the seeds") and writes the
// same file ("sweep.json"); with cluster also --kubeconfig, --namespace
// and --helper-image (fiomig sweep has them among fiomig run's flags).
func RegisterFarmFlags(fs *flag.FlagSet, f *FarmOptions, what, file string, cluster bool) {
	fs.StringVar(&f.On, "on", "", "`kube`: run "+what+" as one Indexed Job of --helper-image in --namespace of the cluster of --kubeconfig, writing the same "+file+" (docs/farm.md); empty: here")
	fs.IntVar(&f.Parallelism, "parallelism", 2, "with --on kube: `pods` running at once (the runs are dealt to 4 times as many Job indexes, more when an index would hold over 200 runs)")
	fs.StringVar(&f.Attach, "attach", "", "with --on kube: follow the farm of this run `id` to its end after the process that started it died; what it runs comes from its Job")
	if cluster {
		d := DefaultSpec()
		fs.StringVar(&f.Kubeconfig, "kubeconfig", d.Kubeconfig, "with --on kube: kubeconfig `file` (default $KUBECONFIG)")
		fs.StringVar(&f.Namespace, "namespace", d.Kube.Namespace, "with --on kube: `namespace` of the farm's Job, pods and Lease")
		fs.StringVar(&f.Image, "helper-image", d.Kube.HelperImage, "with --on kube: `image` whose entry point is fiomig, which the pods run (make images builds it)")
	}
}

// CompletionIndex is a farm pod's shard: the Job controller's
// $JOB_COMPLETION_INDEX (-1 when it is not a number: no pod of a farm).
func CompletionIndex() int {
	i, err := strconv.Atoi(os.Getenv("JOB_COMPLETION_INDEX"))
	if err != nil {
		return -1
	}
	return i
}

// Local says whether f runs here (--on empty) rather than on a farm;
// --on other than kube, or --attach without it, is a UsageError.
func (f FarmOptions) Local() (bool, error) {
	switch {
	case f.On == "kube":
		return false, nil
	case f.On != "" || f.Attach != "":
		return false, Usagef("--on must be kube or empty, got %q (--attach needs --on kube)", f.On)
	}
	return true, nil
}

// farmSettings are a farm's sweep as its Job's kube.AnnotationFarm holds
// it: what --attach rebuilds the sweep from.
type farmSettings struct {
	SeedsArg     string   `json:"seeds_arg"`
	RunArgs      []string `json:"run_args"`
	Timelines    string   `json:"timelines"`
	MaxTimelines int      `json:"max_timelines"`
	SelfCheck    float64  `json:"self_check"`
	UntilCovered int      `json:"until_covered"`
	Command      string   `json:"command"`
	FarmCommand  string   `json:"farm_command"`
	StartUnix    int64    `json:"start_unix"`
	Shards       int      `json:"shards"`
	Parallelism  int      `json:"parallelism"`
	Image        string   `json:"image"`
	// Reproduce, when set, makes it a farm of fiomig reproduce
	// (FarmHypotheses), whose own settings it holds; the fields above
	// that are a sweep's stay empty.
	Reproduce *reproduceSettings `json:"reproduce,omitempty"`
}

// farmShards is how many indexes n runs are dealt to (FarmOptions.Shards).
func farmShards(n int, f FarmOptions) int {
	shards := f.Shards
	if shards <= 0 {
		shards = max(4*f.Parallelism, (n+maxShardTasks-1)/maxShardTasks)
	}
	return max(1, min(shards, n))
}

// farmLine is one line a farm pod prints on stdout (runShard): a seed's
// result (Shard: its sweep.json line, summary.json's SHA-256, plan.json
// and summary.json gzipped), a self-check rerun's SHA-256 (Again), an
// incident run's (ReproduceShard: its figures, summary.json's SHA-256,
// plan.json and summary.json gzipped, or the error that kept it from
// being made), or the shard's end with its CPU and wall seconds.
type farmLine struct {
	Farm    int                       `json:"fiomig_farm"`
	Pos     int                       `json:"pos"`
	Seed    *record.SweepSeed         `json:"seed,omitempty"`
	Figures *analysis.IncidentFigures `json:"figures,omitempty"`
	Err     string                    `json:"error,omitempty"`
	Again   bool                      `json:"again,omitempty"`
	Sum     string                    `json:"sum,omitempty"`
	Plan    []byte                    `json:"plan,omitempty"`
	Summary []byte                    `json:"summary,omitempty"`
	End     bool                      `json:"end,omitempty"`
	Seeds   int                       `json:"seeds,omitempty"`
	CPUS    float64                   `json:"cpu_s,omitempty"`
	WallS   float64                   `json:"wall_s,omitempty"`
	// index is the completion index of the pod that printed it.
	index int
}

// farmTask is one run of a shard: position pos of the seed list, or the
// self-check's second run of it (again).
type farmTask struct {
	pos   int
	again bool
}

// shardTasks deals n seeds to shards: position p to shard p mod shards,
// in list order, so that the seeds done at any time are close to a prefix
// of the list (--until-covered); the self-check's second run of position
// p goes to the next shard (another pod), right after that shard's own
// position p+1. With one shard the second runs are left to the harness.
func shardTasks(n, shards int, check []bool) [][]farmTask {
	out := make([][]farmTask, shards)
	for p := range n {
		out[p%shards] = append(out[p%shards], farmTask{p, false})
		if p > 0 && check[p-1] && shards > 1 {
			out[p%shards] = append(out[p%shards], farmTask{p - 1, true})
		}
	}
	if n > 0 && check[n-1] && shards > 1 {
		out[n%shards] = append(out[n%shards], farmTask{n - 1, true})
	}
	return out
}

// Shard is what a sweep farm's pod runs: index of shards of o.Seeds
// (runShard), each seed with the same call as a local sweep (runSeed),
// its line carrying its sweep.json line, plan.json and summary.json.
// s.Out holds the runs while they are read; each is removed after. A
// signal ends it with ctx's error.
func Shard(ctx context.Context, s Spec, o SweepOptions, shards, index int, w io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	dir, err := shardDir(s.Out, shards, index)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sw := &sweeper{s: s, o: o, dir: dir}
	return runShard(ctx, len(o.Seeds), selfCheckAt(len(o.Seeds), o.SelfCheck), shards, index, w, func(t farmTask) (farmLine, error) {
		seed := o.Seeds[t.pos]
		if t.again {
			return farmLine{Again: true, Sum: sw.rerun(ctx, seed)}, nil
		}
		x, interrupted := runSeed(ctx, dir, s, seed, o.Timelines)
		if interrupted {
			return farmLine{}, context.Canceled
		}
		l := farmLine{Seed: &x}
		if x.Dir != "" {
			l.Plan, l.Summary, l.Sum, err = shipRun(filepath.Join(dir, x.Dir))
			if x.Verdict != "error" && err != nil {
				return l, fmt.Errorf("seed %d: %w", seed, err)
			}
			os.RemoveAll(filepath.Join(dir, x.Dir))
		}
		return l, nil
	})
}

// shardDir checks a shard's index and makes the directory its runs are
// made in, under out.
func shardDir(out string, shards, index int) (string, error) {
	if shards < 1 || index < 0 || index >= shards {
		return "", Usagef("--shard %d: index %d ($JOB_COMPLETION_INDEX) is not one of 0..%d", shards, index, shards-1)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(out, "shard-")
}

// runShard is a farm pod's loop: the tasks of shard index of shards over
// n positions (shardTasks; check marks the self-check's), one at a time,
// run by run, printing the farmLine it returns (its position set) on w,
// then a last line with the shard's CPU and wall seconds. Once ctx is done
// (a signal) it ends with ctx's error, printing no line of a run that
// signal cut short.
func runShard(ctx context.Context, n int, check []bool, shards, index int, w io.Writer, run func(farmTask) (farmLine, error)) error {
	enc := json.NewEncoder(w)
	start, cpu0 := time.Now(), cpuSeconds()
	tasks := shardTasks(n, shards, check)[index]
	for _, t := range tasks {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l, err := run(t)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		l.Farm, l.Pos = 1, t.pos
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return enc.Encode(farmLine{Farm: 1, End: true, Pos: -1, Seeds: len(tasks), CPUS: cpuSeconds() - cpu0, WallS: time.Since(start).Seconds()})
}

// shipRun is what a farm line carries of the run directory dir: plan.json
// and summary.json gzipped, and summary.json's SHA-256.
func shipRun(dir string) (plan, summary []byte, sum string, err error) {
	if plan, err = gzipFile(filepath.Join(dir, record.PlanFile)); err != nil {
		return nil, nil, "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		return nil, nil, "", err
	}
	sum, _ = summaryFacts(b)
	summary, err = gzipBytes(b)
	return plan, summary, sum, err
}

// Farm runs the sweep of s and o as a farm: one Indexed Job of f.Image
// (kube.FarmJobObject) whose index i runs Shard i, f.Parallelism at once;
// the harness follows the pods' logs, reports progress as a local sweep
// does, writes each seed's plan.json and summary.json into its seed
// directory as it arrives, stops the Job once the coverage is reached
// (o.UntilCovered), and finishes as Sweep does: the same sweep.json,
// sweep.md and ECDF as a local sweep of the same seeds. The seeds that
// keep their timeline are rerun here, their whole run directory
// re-created and their summary compared with the pod's; the self-check's
// second runs run on another pod (here, with one shard). farm.json says
// where everything ran. A seed a pod ran twice (an index retried) is
// compared too. The Job, its pods and its Lease are removed at the end, on
// an error and on ctx's end (SIGINT). A cluster that cannot be reached, a
// farm that cannot run these flags or a Job that failed are errors; the
// sweep directory then holds what arrived.
func Farm(ctx context.Context, s Spec, o SweepOptions, f FarmOptions) (SweepResult, error) {
	if f.Attach == "" {
		if err := farmable(s, o, f); err != nil {
			return SweepResult{}, err
		}
	}
	fc, err := openFarm(ctx, &f, s.Kube.Namespace)
	if err != nil {
		return SweepResult{}, err
	}
	set := farmSettings{SeedsArg: o.SeedsArg, RunArgs: s.Flags("seed"), Timelines: o.Timelines, MaxTimelines: o.MaxTimelines,
		SelfCheck: o.SelfCheck, UntilCovered: o.UntilCovered, Command: o.Command, FarmCommand: f.Command,
		StartUnix: o.StartUnix, Parallelism: f.Parallelism, Image: f.Image}
	if f.Attach != "" {
		if s, o, set, err = attachFarm(ctx, fc, s, o); err != nil {
			return SweepResult{}, err
		}
	} else {
		if set.StartUnix == 0 {
			set.StartUnix = time.Now().Unix()
		}
		set.Shards = farmShards(len(o.Seeds), f)
		o.StartUnix = set.StartUnix
	}
	sw, err := newSweep(s, o)
	if err != nil {
		return SweepResult{}, err
	}
	if f.Attach != "" {
		sw.dir = filepath.Join(s.Out, "sweep-"+strconv.FormatInt(set.StartUnix, 10))
		err = os.MkdirAll(sw.dir, 0o755)
	} else {
		err = sw.create()
	}
	if err != nil {
		return SweepResult{}, err
	}
	args := append([]string{"sweep", "--shard=" + strconv.Itoa(set.Shards), "--seeds=" + set.SeedsArg, "--timelines=" + set.Timelines,
		"--self-check=" + strconv.FormatFloat(set.SelfCheck, 'g', -1, 64), "--out=/work"}, set.RunArgs...)
	rep, ferr := driveFarm(ctx, fc, f, set, args, "sweep", sw.o.Log, sw.farmLine)
	if rep == nil {
		return SweepResult{Dir: sw.dir}, ferr
	}
	rep.Rechecks = append(rep.Rechecks, sw.rechecks...)
	res, err := sw.finish(ctx, func(x record.SweepSeed) (*record.SweepMismatch, error) {
		rep.LocalReruns = append(rep.LocalReruns, x.Seed)
		return sw.recreate(ctx, x)
	})
	if d := res.Sweep.Determinism; d != nil {
		onPod := map[int64]bool{}
		for _, r := range rep.Rechecks {
			onPod[r.Seed] = true
		}
		for _, seed := range d.Seeds {
			if !onPod[seed] {
				rep.Rechecks = append(rep.Rechecks, farmRecheck{Seed: seed, On: "local"})
			}
		}
	}
	if werr := record.WriteJSON(filepath.Join(sw.dir, FarmFile), rep); err == nil {
		err = werr
	}
	return res, errors.Join(ferr, err)
}

// openFarm connects to f's cluster for a new farm, or for f.Attach's;
// f.Namespace defaults to ns.
func openFarm(ctx context.Context, f *FarmOptions, ns string) (*kube.Farm, error) {
	if f.Namespace == "" {
		f.Namespace = ns
	}
	runID := f.Attach
	if runID == "" {
		runID = kube.NewRunID(time.Now())
	}
	fc, err := kube.FarmClient(ctx, f.Kubeconfig, f.REST, f.Namespace, runID)
	if err != nil {
		return nil, UsageError{fmt.Errorf("%s", oneLine(err))}
	}
	return fc, nil
}

// driveFarm runs a farm to its end: it creates the Job (unless attaching)
// whose pods run args, says so on log, follows the pods' logs (follow;
// take gets every line but the shards' end lines) and removes the Job,
// its pods and Lease — at the end, on an error and on ctx's end. The
// record is farm.json's so far (nil when the Job could not be created);
// cmd names the fiomig command for the messages.
func driveFarm(ctx context.Context, fc *kube.Farm, f FarmOptions, set farmSettings, args []string, cmd string, log io.Writer,
	take func(farmLine) (stop bool, err error)) (*farmRecord, error) {
	runID := fc.RunID()
	if f.Attach == "" {
		if err := fc.Create(ctx, farmJob(f, runID, set, args)); err != nil {
			return nil, UsageError{fmt.Errorf("%s", oneLine(err))}
		}
	}
	if log != nil {
		fmt.Fprintf(log, "fiomig %s: farm %s: Job %s/%s of %s, %d shards, %d at a time (after this process ends: fiomig %s --on kube --attach %s)\n",
			cmd, runID, f.Namespace, runID, set.Image, set.Shards, set.Parallelism, cmd, runID)
	}
	rep := &farmRecord{RunID: runID, Namespace: f.Namespace, Image: set.Image, Shards: set.Shards, Parallelism: set.Parallelism,
		Command: set.FarmCommand, LocalCommand: set.Command, Rechecks: []farmRecheck{}, LocalReruns: []int64{}}
	start := time.Now()
	ferr := follow(ctx, fc, set.Shards, rep, take)
	if derr := fc.Delete(ctx); derr != nil {
		ferr = errors.Join(ferr, fmt.Errorf("%s (fiomig janitor --kubeconfig %s --namespace %s removes it)", oneLine(derr), f.Kubeconfig, f.Namespace))
	}
	rep.WallS = time.Since(start).Seconds()
	return rep, ferr
}

// farmable refuses what a farm cannot run: the kube backend (the pods run
// the simulator), a fault file (the pods cannot read it), every timeline
// (each would be rerun here).
func farmable(s Spec, o SweepOptions, f FarmOptions) error {
	switch {
	case s.Backend != BackendSim:
		return Usagef("--on kube runs simulator seeds in pods; --backend %s is one run's", s.Backend)
	case s.faultFile() != "":
		return Usagef("--on kube: the pods cannot read --fault-file %s; give --faults", s.faultFile())
	case o.Timelines == KeepAll:
		return Usagef("--on kube: --timelines all would rerun every seed here to bring its timeline back; use failing or none")
	case f.Parallelism < 1:
		return Usagef("--parallelism must be >= 1, got %d", f.Parallelism)
	case f.Image == "":
		return Usagef("--on kube needs the fiomig image (--helper-image)")
	}
	return nil
}

// farmJob is the Job of a farm: every pod runs fiomig with args (`fiomig
// sweep --shard N` with the sweep's seeds and flags, `fiomig reproduce
// --shard N --farm SETTINGS`), its runs under /work (an emptyDir); the
// Job's annotation holds set.
func farmJob(f FarmOptions, runID string, set farmSettings, args []string) kube.FarmJob {
	settings, _ := json.Marshal(set)
	var env []corev1.EnvVar
	if v := os.Getenv(NondeterministicSeedEnv); v != "" {
		env = append(env, corev1.EnvVar{Name: NondeterministicSeedEnv, Value: v})
	}
	return kube.FarmJob{Namespace: f.Namespace, RunID: runID, Image: set.Image, Args: args, Env: env,
		Shards: set.Shards, Parallelism: set.Parallelism, Settings: string(settings)}
}

// attachedSettings are the settings of the farm fc attaches to, from
// its Job; reproduce says which command's farm the caller is (a farm of
// the other is a UsageError naming the command that attaches to it).
func attachedSettings(ctx context.Context, fc *kube.Farm, reproduce bool) (farmSettings, error) {
	var set farmSettings
	job, err := fc.Job(ctx)
	if err != nil {
		return set, UsageError{fmt.Errorf("--attach %s: %s", fc.RunID(), oneLine(err))}
	}
	if err := json.Unmarshal([]byte(job.Annotations[kube.AnnotationFarm]), &set); err != nil {
		return set, Usagef("--attach %s: Job annotation %s: %v", fc.RunID(), kube.AnnotationFarm, err)
	}
	switch {
	case reproduce && set.Reproduce == nil:
		return set, Usagef("--attach %s: a sweep's farm (fiomig sweep --on kube --attach %s)", fc.RunID(), fc.RunID())
	case !reproduce && set.Reproduce != nil:
		return set, Usagef("--attach %s: a farm of fiomig reproduce (fiomig reproduce --on kube --attach %s)", fc.RunID(), fc.RunID())
	}
	return set, nil
}

// attachFarm rebuilds a farm's sweep from its Job: the spec from the run
// flags it recorded (s keeps its --out), the sweep's options (o keeps its
// --jobs and writers).
func attachFarm(ctx context.Context, fc *kube.Farm, s Spec, o SweepOptions) (Spec, SweepOptions, farmSettings, error) {
	set, err := attachedSettings(ctx, fc, false)
	if err != nil {
		return s, o, set, err
	}
	fs := flag.NewFlagSet("fiomig run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var x Spec
	RegisterFlags(fs, &x)
	if err := fs.Parse(set.RunArgs); err != nil {
		return s, o, set, Usagef("--attach %s: the farm's run flags %q: %v", fc.RunID(), set.RunArgs, err)
	}
	x.Out = s.Out
	seeds, err := ParseSeeds(set.SeedsArg)
	if err != nil {
		return s, o, set, UsageError{err}
	}
	o = SweepOptions{Seeds: seeds, SeedsArg: set.SeedsArg, Jobs: max(1, o.Jobs), Timelines: set.Timelines, MaxTimelines: set.MaxTimelines,
		SelfCheck: set.SelfCheck, UntilCovered: set.UntilCovered, Command: set.Command, StartUnix: set.StartUnix, Log: o.Log, Progress: o.Progress}
	return x, o, set, nil
}

// follow reads the farm's pods' logs until every index printed its end,
// take says stop (a sweep's coverage is reached) or fails, the Job failed
// or ctx ends; it renews the Lease every 10 s and keeps the pods' story
// and the shards' end lines in rep.
func follow(ctx context.Context, fc *kube.Farm, shards int, rep *farmRecord, take func(farmLine) (stop bool, err error)) error {
	lines := make(chan farmLine, 64)
	type stream struct {
		uid   types.UID
		index int
		done  bool
	}
	ended := make(chan stream, 16)
	state := map[types.UID]string{} // "following", "done"
	ends := map[int]farmLine{}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	read := func(p corev1.Pod, terminal bool) {
		defer wg.Done()
		index, ok, sawEnd := kube.PodIndex(p), false, false
		defer func() { ended <- stream{p.UID, index, ok} }()
		rc, err := fc.Logs(fctx, p.Name, !terminal)
		if err != nil {
			return
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			var l farmLine
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Farm != 1 {
				continue
			}
			l.index, sawEnd = index, sawEnd || l.End
			select {
			case lines <- l:
			case <-fctx.Done():
				return
			}
		}
		// A stream that ended on the shard's end line, or on a pod
		// already ended, need not be read again.
		ok = sc.Err() == nil && (terminal || sawEnd)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lease := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case st := <-ended:
			if st.done {
				state[st.uid] = "done"
			} else {
				delete(state, st.uid)
			}
		case l := <-lines:
			stop, err := farmTake(l, ends, rep, take)
			if err != nil || stop {
				return err
			}
			if len(ends) == shards {
				return nil
			}
		case <-tick.C:
			if time.Since(lease) > 10*time.Second {
				if err := fc.RenewLease(ctx); err == nil {
					lease = time.Now()
				}
			}
			job, err := fc.Job(ctx)
			if err != nil {
				return err
			}
			pods, err := fc.Pods(ctx)
			if err != nil {
				continue
			}
			rep.notePods(pods)
			following := false
			for _, p := range pods {
				switch state[p.UID] {
				case "following":
					following = true
					continue
				case "done":
					continue
				}
				terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
				if !terminal && !containerStarted(p) {
					continue
				}
				state[p.UID], following = "following", true
				wg.Add(1)
				go read(p, terminal)
			}
			done, failed := kube.JobFinished(job)
			switch {
			case failed != "":
				return fmt.Errorf("farm %s failed: %s", fc.RunID(), failed)
			case done && !following && len(lines) == 0 && len(ends) < shards:
				return fmt.Errorf("farm %s: the Job is complete but %d of %d indexes printed no end line (were their pods' logs lost?)", fc.RunID(), shards-len(ends), shards)
			}
		}
	}
}

func containerStarted(p corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running != nil || c.State.Terminated != nil {
			return true
		}
	}
	return false
}

// farmTake gives line l of a farm pod to take, but an index's end line,
// which it keeps in ends and rep.
func farmTake(l farmLine, ends map[int]farmLine, rep *farmRecord, take func(farmLine) (bool, error)) (bool, error) {
	if l.End {
		ends[l.index] = l
		rep.noteEnd(l)
		return false, nil
	}
	return take(l)
}

// farmLine takes one line of a sweep farm's pod: a seed's first run is
// written to its seed directory and counted (stop: the sweep should stop),
// a second run of the self-check is noted; a seed arriving again (an
// index retried) is compared with its first arrival.
func (sw *sweeper) farmLine(l farmLine) (stop bool, err error) {
	if l.Pos < 0 || l.Pos >= len(sw.o.Seeds) || (l.Seed != nil && l.Seed.Seed != sw.o.Seeds[l.Pos]) {
		return false, fmt.Errorf("a farm pod printed a result for position %d that is not this sweep's (another image or other flags?)", l.Pos)
	}
	sw.mu.Lock()
	prev, ran := sw.runs[l.Pos], sw.runs[l.Pos].ran
	prevAgain, again := sw.again[l.Pos]
	sw.mu.Unlock()
	seed := sw.o.Seeds[l.Pos]
	switch {
	case l.Again && again:
		sw.differ(seed, prevAgain, l.Sum)
		return false, nil
	case l.Again:
		sw.rechecks = append(sw.rechecks, farmRecheck{Seed: seed, On: "index " + strconv.Itoa(l.index)})
		sw.second(l.Pos, l.Sum)
		return false, nil
	case l.Seed == nil:
		return false, nil
	case ran:
		sw.differ(seed, prev.sum, l.Sum)
		return false, nil
	}
	r := seedRun{seed: *l.Seed, sum: l.Sum}
	if r.seed.Dir != "" && len(l.Summary) > 0 {
		d := filepath.Join(sw.dir, r.seed.Dir)
		sum, err := gunzip(l.Summary)
		if err != nil {
			return false, fmt.Errorf("seed %d: summary.json: %w", seed, err)
		}
		plan, err := gunzip(l.Plan)
		if err != nil {
			return false, fmt.Errorf("seed %d: plan.json: %w", seed, err)
		}
		_, r.landed = summaryFacts(sum)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return false, err
		}
		if err := errors.Join(os.WriteFile(filepath.Join(d, record.PlanFile), plan, 0o644), os.WriteFile(filepath.Join(d, record.SummaryFile), sum, 0o644)); err != nil {
			return false, err
		}
	}
	return sw.done(l.Pos, r), nil
}

// differ notes two summaries of seed that should be the same.
func (sw *sweeper) differ(seed int64, a, b string) {
	if a != b {
		sw.mu.Lock()
		sw.extra = append(sw.extra, record.SweepMismatch{Seed: seed, First: a, Second: b})
		sw.mu.Unlock()
	}
}

// recreate reruns seed x here into its seed directory — the whole run
// directory, timeline included — and compares its summary with the one
// the pod sent; on a difference the pod's plan.json and summary.json stay.
func (sw *sweeper) recreate(ctx context.Context, x record.SweepSeed) (*record.SweepMismatch, error) {
	tmp, err := os.MkdirTemp(sw.dir, ".local-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	y, interrupted := runSeed(ctx, tmp, sw.s, x.Seed, KeepAll)
	if interrupted || y.Dir == "" {
		return nil, fmt.Errorf("seed %d: its local rerun (for its timeline) ended early: %s", x.Seed, y.Error)
	}
	b, err := os.ReadFile(filepath.Join(tmp, y.Dir, record.SummaryFile))
	if err != nil {
		return nil, err
	}
	local, _ := summaryFacts(b)
	remote, _ := os.ReadFile(filepath.Join(sw.dir, x.Dir, record.SummaryFile))
	pod, _ := summaryFacts(remote)
	if local != pod {
		return &record.SweepMismatch{Seed: x.Seed, First: pod, Second: local}, nil
	}
	if err := os.RemoveAll(filepath.Join(sw.dir, x.Dir)); err != nil {
		return nil, err
	}
	return nil, os.Rename(filepath.Join(tmp, y.Dir), filepath.Join(sw.dir, x.Dir))
}

// farmRecord is farm.json.
type farmRecord struct {
	RunID       string `json:"run_id"`
	Namespace   string `json:"namespace"`
	Image       string `json:"image"`
	Shards      int    `json:"shards"`
	Parallelism int    `json:"parallelism"`
	// Command is the farm's command line; LocalCommand the local command
	// that writes the same sweep.json or reproduce.md (theirs).
	Command      string `json:"command"`
	LocalCommand string `json:"local_command"`
	// Indexes are the shards that ended: seeds run, CPU (user + system of
	// the pod's fiomig) and wall seconds, by index.
	Indexes []farmIndex `json:"indexes"`
	// Pods are every pod the Job made, retries included.
	Pods []farmPod `json:"pods"`
	// Rechecks say where each self-check second run ran ("index N", or
	// "local" here); LocalReruns are the seeds rerun here to bring back
	// their timeline.
	Rechecks    []farmRecheck `json:"rechecks"`
	LocalReruns []int64       `json:"local_reruns"`
	// CPUS is the pods' CPU seconds summed; WallS the farm's wall time
	// from the Job's creation to the last result, seconds.
	CPUS  float64 `json:"cpu_s"`
	WallS float64 `json:"wall_s"`
}

type farmIndex struct {
	Index int     `json:"index"`
	Seeds int     `json:"runs"`
	CPUS  float64 `json:"cpu_s"`
	WallS float64 `json:"wall_s"`
}

type farmPod struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
	Node  string `json:"node"`
	Phase string `json:"phase"`
	// Disrupted: the pod carries the DisruptionTarget condition (evicted,
	// preempted, its node drained): the Job's pod failure policy ignores
	// its failure.
	Disrupted bool `json:"disrupted,omitempty"`
}

type farmRecheck struct {
	Seed int64  `json:"seed"`
	On   string `json:"on"`
}

func (r *farmRecord) noteEnd(l farmLine) {
	for i, x := range r.Indexes {
		if x.Index == l.index {
			r.CPUS -= x.CPUS
			r.Indexes = append(r.Indexes[:i], r.Indexes[i+1:]...)
			break
		}
	}
	r.Indexes = append(r.Indexes, farmIndex{Index: l.index, Seeds: l.Seeds, CPUS: l.CPUS, WallS: l.WallS})
	r.CPUS += l.CPUS
}

func (r *farmRecord) notePods(pods []corev1.Pod) {
	for _, p := range pods {
		fp := farmPod{Name: p.Name, Index: kube.PodIndex(p), Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
		for _, c := range p.Status.Conditions {
			fp.Disrupted = fp.Disrupted || (c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue)
		}
		found := false
		for i := range r.Pods {
			if r.Pods[i].Name == fp.Name {
				r.Pods[i], found = fp, true
			}
		}
		if !found {
			r.Pods = append(r.Pods, fp)
		}
	}
}

// cpuSeconds is this process's user + system CPU time, seconds.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func gzipFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return gzipBytes(b)
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

package suites_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/record"
)

var _ = Describe("fiomig run --backend kube interrupted", Label("kube", "interrupt"), func() {
	It("removes every object of the run on SIGINT, keeps the run directory and exits 130", func(ctx SpecContext) {
		env := kubeEnv()
		bin := fiomigBinary(ctx)

		outDir := GinkgoT().TempDir()
		cmd := exec.CommandContext(ctx, bin, "run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
			"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
			"--cluster-secret-file", env.SecretFile, "--volumes", "3", "--migrations", "6", "--out", outDir)
		cmd.Stderr = GinkgoWriter
		stdout, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(cmd.Start()).To(Succeed())
		runRE := regexp.MustCompile(`kube: run (fiomig-[0-9]+-[0-9a-f]+) in namespace`)
		var id string
		sc := bufio.NewScanner(stdout)
		deadline := time.Now().Add(3 * time.Minute)
		for sc.Scan() && time.Now().Before(deadline) {
			line := sc.Text()
			GinkgoWriter.Println(line)
			if m := runRE.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
			// Mid-run: the first migration was created and is under way.
			if id != "" && regexp.MustCompile(`VolumeMigration `+id+`-mig-1`).MatchString(line) {
				time.Sleep(2 * time.Second)
				break
			}
		}
		Expect(id).NotTo(BeEmpty(), "the run never said its id")
		Expect(env.Labelled(ctx, id)).NotTo(BeEmpty(), "mid-run, the run's objects should exist")
		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		go func() {
			for sc.Scan() {
				GinkgoWriter.Println(sc.Text())
			}
		}()
		err = cmd.Wait()
		var ee *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(ee))
		Expect(err.(*exec.ExitError).ExitCode()).To(Equal(130))
		Expect(env.Labelled(ctx, id)).To(BeEmpty())
		dirs, _ := filepath.Glob(filepath.Join(outDir, "fio-mig-*"))
		Expect(dirs).To(HaveLen(1))
		Expect(filepath.Join(dirs[0], record.TimelineFile)).To(BeAnExistingFile())
		fi, err := os.Stat(filepath.Join(dirs[0], record.TimelineFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Size()).To(BeNumerically(">", 0))
	})
})

var (
	binOnce sync.Once
	binPath string
	binDir  string
	binErr  error
)

// fiomigBinary builds cmd/fiomig once for the specs that run it as a
// process (signals, exit codes).
func fiomigBinary(ctx context.Context) string {
	GinkgoHelper()
	binOnce.Do(func() {
		root, err := kubetest.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		dir, err := os.MkdirTemp("", "fiomig-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir // removed by the AfterSuite (a DeferCleanup here would end with the first spec)
		binPath = filepath.Join(dir, "fiomig")
		build := exec.CommandContext(ctx, "go", "build", "-o", binPath, "./cmd/fiomig")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/fiomig: %w\n%s", err, out)
		}
	})
	Expect(binErr).NotTo(HaveOccurred())
	return binPath
}

var _ = Describe("fiomig run --backend kube to the end", Label("kube", "cli"), func() {
	It("completes 5 migrations, writes the run directory and report as on the simulator, leaves nothing labelled and shows the secret nowhere", func(ctx SpecContext) {
		env := freshKubeEnv()
		bin := fiomigBinary(ctx)
		outDir := GinkgoT().TempDir()
		var stdout, stderr strings.Builder
		cmd := exec.CommandContext(ctx, bin, "run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
			"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
			"--cluster-secret-file", env.SecretFile,
			"--volumes", "3", "--migrations", "5", "--faults", "none", "--settle", "6", "--attribution-margin", "5", "--out", outDir)
		cmd.Stdout = io.MultiWriter(&stdout, GinkgoWriter)
		cmd.Stderr = io.MultiWriter(&stderr, GinkgoWriter)
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		// No fio runs in the stand-in: the fio checks are inconclusive
		// (exit 3) unless another check failed (exit 1).
		Expect(code).To(BeElementOf(0, 1, 3), stdout.String())
		id := regexp.MustCompile(`kube: run (fiomig-[0-9]+-[0-9a-f]+) in namespace`).FindStringSubmatch(stdout.String())
		Expect(id).To(HaveLen(2))
		Expect(env.Labelled(ctx, id[1])).To(BeEmpty())
		dirs, _ := filepath.Glob(filepath.Join(outDir, "fio-mig-*"))
		Expect(dirs).To(HaveLen(1))
		for _, f := range []string{record.PlanFile, record.TimelineFile, "summary.json", "report.md", "report.html", "junit.xml",
			filepath.Join(record.FioDir, record.FioWorkloadFile)} {
			Expect(filepath.Join(dirs[0], f)).To(BeAnExistingFile())
		}
		Expect(stdout.String()).To(ContainSubstring("verdict:"))
		var sum record.Summary
		b, err := os.ReadFile(filepath.Join(dirs[0], "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(b, &sum)).To(Succeed())
		completed := 0
		for _, m := range sum.Migrations {
			if m.Outcome == record.PhaseCompleted {
				completed++
			}
		}
		Expect(completed).To(BeNumerically(">=", 5), "migrations %+v", sum.Migrations)

		// The secret appears in no file of the run directory (JUnit
		// included) and in no line the run printed.
		secret := env.StandIn.ClusterSecret()
		Expect(stdout.String()).NotTo(ContainSubstring(secret))
		Expect(stderr.String()).NotTo(ContainSubstring(secret))
		Expect(secretNowhere(outDir, secret)).To(Succeed())
	})

	It("without the secret exits 2 with one line naming the missing credential, before touching the cluster", func(ctx SpecContext) {
		env := kubeEnv()
		bin := fiomigBinary(ctx)
		var stdout, stderr strings.Builder
		cmd := exec.CommandContext(ctx, bin, "run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
			"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
			"--volumes", "3", "--migrations", "5", "--out", GinkgoT().TempDir())
		cmd.Env = append(os.Environ(), "FIOMIG_CLUSTER_SECRET=")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		Expect(errors.As(err, &ee)).To(BeTrue(), "exit status: %v", err)
		Expect(ee.ExitCode()).To(Equal(2))
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		Expect(lines).To(HaveLen(1), stderr.String())
		Expect(lines[0]).To(And(ContainSubstring("cluster secret"), ContainSubstring("--cluster-secret-file"), ContainSubstring("FIOMIG_CLUSTER_SECRET")))
		Expect(stdout.String()).NotTo(ContainSubstring("kube: run "))
	})
})

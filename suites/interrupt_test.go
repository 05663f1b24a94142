package suites_test

import (
	"bufio"
	"context"
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
			"--volumes", "3", "--migrations", "6", "--out", outDir)
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
	It("writes the run directory and report as on the simulator and leaves nothing labelled", func(ctx SpecContext) {
		env := kubeEnv()
		bin := fiomigBinary(ctx)
		outDir := GinkgoT().TempDir()
		var stdout strings.Builder
		cmd := exec.CommandContext(ctx, bin, "run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
			"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
			"--volumes", "3", "--migrations", "1", "--faults", "none", "--settle", "6", "--attribution-margin", "5", "--out", outDir)
		cmd.Stdout = io.MultiWriter(&stdout, GinkgoWriter)
		cmd.Stderr = GinkgoWriter
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
	})
})

package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/fio"
)

// File names inside one fio process's directory.
const (
	JobFileName = "job.fio"
	// OutputFileName is fio's --output in --output-format=json+, kept as
	// fio wrote it: stopped by fiomig's SIGINT, fio puts the line "fio:
	// terminating on signal 2" before the JSON document, so the file is
	// not pure JSON; fio.ParseResult skips that text preamble (its
	// Preamble field keeps it).
	OutputFileName = "result.json"
	StderrFileName = "stderr.txt" // io_u error lines, verify reports
	StdoutFileName = "stdout.txt"
	// LogPrefix is write_lat_log's prefix: the per-I/O total-latency log
	// is fio.LatLogName(LogPrefix, 1) = "lat_lat.1.log".
	LogPrefix = "lat"
)

// DefaultRateIOPS caps each fio job at this many I/Os per second, reads and
// writes together (fio.Job.RateIOPS renders it as the read,write split of
// the 70 % read mix, rate_iops=70,30, since fio caps each direction apart):
// 100 I/Os per second per volume keeps several volumes honest on 2 cores
// and still resolves a gap to about 10 ms.
const DefaultRateIOPS = 100

// DefaultRuntime bounds a time-based job that is never stopped: fio is
// meant to be stopped (SIGINT) when the run ends.
const DefaultRuntime = 24 * time.Hour

// FioSpec is one fio process running the migration workload on one file.
type FioSpec struct {
	// Name is the job name (the volume's name).
	Name string
	// Filename is the file fio does I/O to.
	Filename string
	// Dir receives the job file, the JSON+ result, stderr, stdout and the
	// latency logs; fio runs with it as working directory. Created if
	// missing.
	Dir string
	// Size is the region of the file the job covers (default 1 GiB, the
	// migration workload's); it must fit in the file.
	Size int64
	// RateIOPS caps the job's I/Os per second, reads and writes together
	// (default DefaultRateIOPS; negative = uncapped; see fio.Job.RateIOPS).
	RateIOPS int
	// Runtime bounds the job (default DefaultRuntime).
	Runtime time.Duration
	// Binary is the fio executable (default "fio" from PATH).
	Binary string
	// Marker, when set, is put in fio's environment as MarkerEnv, so that
	// every process fio forks can be found (MarkedProcesses).
	Marker string
}

// FioFiles are the paths one fio process writes, all inside Dir.
type FioFiles struct {
	Dir     string `json:"dir"`
	JobFile string `json:"job_file"`
	Output  string `json:"output"`
	Stderr  string `json:"stderr"`
	Stdout  string `json:"stdout"`
	LatLog  string `json:"lat_log"`
}

// FilesIn are the file paths of a fio process writing into dir.
func FilesIn(dir string) FioFiles {
	return FioFiles{
		Dir:     dir,
		JobFile: filepath.Join(dir, JobFileName),
		Output:  filepath.Join(dir, OutputFileName),
		Stderr:  filepath.Join(dir, StderrFileName),
		Stdout:  filepath.Join(dir, StdoutFileName),
		LatLog:  filepath.Join(dir, fio.LatLogName(LogPrefix, 1)),
	}
}

// Job is the fio job a FioSpec runs: fio.MigrationWorkload on the file,
// its latency log in Dir, with the spec's size and rate.
func (s FioSpec) Job() fio.Job {
	rt := s.Runtime
	if rt <= 0 {
		rt = DefaultRuntime
	}
	j := fio.MigrationWorkload(s.Name, s.Filename, LogPrefix, rt)
	if s.Size > 0 {
		j.Size = fio.Size(s.Size)
	}
	switch {
	case s.RateIOPS == 0:
		j.RateIOPS = DefaultRateIOPS
	case s.RateIOPS > 0:
		j.RateIOPS = s.RateIOPS
	}
	return j
}

// FioProcess is one running fio.
type FioProcess struct {
	Spec  FioSpec
	Files FioFiles
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
}

// FioBinary returns the fio executable to run: bin if given, else "fio"
// from PATH; an error says how to install it.
func FioBinary(bin string) (string, error) {
	if bin == "" {
		bin = "fio"
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("workload: fio not found (%w); install it with `make tools` (Debian: apt-get install fio)", err)
	}
	return p, nil
}

// StartFio writes the job file (documented: every option with its fio
// meaning) and starts fio on it with its JSON+ result going to Files.Output
// (never stdout) and stderr to Files.Stderr. fio runs in its own process
// group, so a Ctrl-C at the terminal reaches only fiomig, which stops fio in
// order; if fiomig dies, the kernel sends fio SIGTERM (PR_SET_PDEATHSIG) and
// fio still writes its result. fio's job processes each run in a session of
// their own (fio backend.c), out of reach of a group kill: spec.Marker in
// their environment finds them (Workload.Stop, Janitor).
func StartFio(spec FioSpec) (*FioProcess, error) {
	bin, err := FioBinary(spec.Binary)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("workload: fio %s: %w", spec.Name, err)
	}
	files := FilesIn(spec.Dir)
	jf := fio.JobFile{
		Comment:    []string{"fiomig migration workload for volume " + spec.Name + " (through the FUSE volume of the simulator)"},
		Jobs:       []fio.Job{spec.Job()},
		Documented: true,
	}
	var b bytes.Buffer
	if err := jf.Render(&b); err != nil {
		return nil, fmt.Errorf("workload: fio %s: job: %w", spec.Name, err)
	}
	if err := os.WriteFile(files.JobFile, b.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("workload: fio %s: %w", spec.Name, err)
	}
	stderr, err := os.Create(files.Stderr)
	if err != nil {
		return nil, fmt.Errorf("workload: fio %s: %w", spec.Name, err)
	}
	stdout, err := os.Create(files.Stdout)
	if err != nil {
		stderr.Close()
		return nil, fmt.Errorf("workload: fio %s: %w", spec.Name, err)
	}
	cmd := exec.Command(bin, fio.Args(JobFileName, OutputFileName)...)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if spec.Marker != "" {
		cmd.Env = append(os.Environ(), MarkerEnv+"="+spec.Marker)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		stderr.Close()
		stdout.Close()
		return nil, fmt.Errorf("workload: start fio %s: %w", spec.Name, err)
	}
	p := &FioProcess{Spec: spec, Files: files, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		stderr.Close()
		stdout.Close()
		close(p.done)
	}()
	return p, nil
}

// ExitSignalled is fio's exit status after it was asked to stop with
// SIGINT or SIGTERM and did so in order (fio backend.c sig_int:
// "terminating on signal", exit_value = 128); its result and logs are
// complete.
const ExitSignalled = 128

// CleanExit reports whether an fio exit status means fio ended in order:
// 0 (its runtime ran out) or ExitSignalled (stopped by fiomig).
func CleanExit(code int) bool { return code == 0 || code == ExitSignalled }

// Pid is fio's process id.
func (p *FioProcess) Pid() int { return p.cmd.Process.Pid }

// Done is closed once fio has exited.
func (p *FioProcess) Done() <-chan struct{} { return p.done }

// Exited reports whether fio has exited.
func (p *FioProcess) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is fio's exit error (nil for exit status 0); valid once Done is closed.
func (p *FioProcess) Err() error { return p.err }

// ExitCode is fio's exit status (-1 if killed by a signal or still running).
func (p *FioProcess) ExitCode() int {
	if !p.Exited() || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to fio's main process (which passes SIGINT and SIGTERM
// on to its jobs as a terminate request); SIGKILL goes to the whole process
// group (fio and the job processes it forked). A process that already
// exited is not an error.
func (p *FioProcess) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	pid := p.cmd.Process.Pid
	if sig == syscall.SIGKILL {
		pid = -pid
	}
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

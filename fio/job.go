package fio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Size is a byte count. It renders with fio's binary suffixes when exact
// (fio's default kb_base=1024: "4k" is 4096 bytes, "1g" is 1 GiB), else as
// plain bytes.
type Size int64

// Common sizes.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
)

// String renders s the way a fio job file writes it ("4k", "1g", "1536").
func (s Size) String() string {
	for _, u := range []struct {
		suffix string
		size   Size
	}{{"t", 1 << 40}, {"g", GiB}, {"m", MiB}, {"k", KiB}} {
		if s != 0 && s%u.size == 0 {
			return strconv.FormatInt(int64(s/u.size), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// fioDuration renders d with fio's time suffixes (fio parses "us", "ms",
// "s"; a bare number is seconds for runtime).
func fioDuration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	default:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	}
}

// IgnoreErrors is fio's ignore_error= option: per error type (read, write,
// verify) the errnos that continue_on_error treats as non-fatal. Setting a
// list REPLACES fio's default non-fatal list for that type, which is
// {EIO, EILSEQ} (fio io_u.c td_non_fatal_error): a list that leaves out EIO
// makes EIO end the job. An empty list keeps the default.
type IgnoreErrors struct {
	Read, Write, Verify []Errno
}

func (ie IgnoreErrors) empty() bool {
	return len(ie.Read) == 0 && len(ie.Write) == 0 && len(ie.Verify) == 0
}

// String renders "READ_LIST,WRITE_LIST,VERIFY_LIST", errnos within a list
// separated by ':' and written as numbers (fio 3.33 knows only some symbolic
// names — "EREMOTEIO" is rejected — but every number).
func (ie IgnoreErrors) String() string {
	list := func(es []Errno) string {
		parts := make([]string, len(es))
		for i, e := range es {
			parts[i] = strconv.Itoa(int(e))
		}
		return strings.Join(parts, ":")
	}
	s := list(ie.Read) + "," + list(ie.Write)
	if len(ie.Verify) > 0 {
		s += "," + list(ie.Verify)
	}
	return s
}

// Option is one extra job option, rendered verbatim as key=value (key alone
// when Value is empty).
type Option struct {
	Key, Value string
	Doc        string // rendered as a comment above the option
}

// Job is one fio job section. Fields map one-to-one to fio options (fio
// HOWTO, "Job file parameters"); a zero field is left out of the job file,
// so fio's own default applies — the defaults worth knowing are in each
// field's comment. Fields of pointer type are options whose fio default is
// true, so that false can be rendered.
type Job struct {
	// Name is the section name [Name]: fio's job name, also the "jobname"
	// of its JSON result. Required; not "global"; no brackets or newlines.
	Name string
	// Description (description=) is free text fio prints with the job.
	Description string
	// Filename (filename=) is the file or device the job does I/O to.
	// fio splits filenames on ':', so Render escapes ':' as '\:'. Required.
	Filename string
	// IOEngine (ioengine=) is how fio issues I/O: "libaio" is Linux native
	// asynchronous I/O (io_submit/io_getevents), "psync" is pread/pwrite.
	IOEngine string
	// Direct (direct=1) opens the file with O_DIRECT: no page cache, every
	// I/O reaches the device (or the FUSE daemon) when fio issues it.
	Direct bool
	// RW (rw=) is the I/O pattern: "randrw" mixes random reads and writes.
	RW string
	// RWMixRead (rwmixread=) is the percentage of reads in a mixed pattern
	// (fio default 50).
	RWMixRead int
	// BlockSize (bs=) is the size of each I/O.
	BlockSize Size
	// IODepth (iodepth=) is how many I/Os fio keeps in flight (fio default 1).
	IODepth int
	// NumJobs (numjobs=) clones the job into N processes (fio default 1).
	NumJobs int
	// Size (size=) is the region of the file the job covers; fio lays the
	// file out to this size first if it is smaller.
	Size Size
	// TimeBased (time_based=1) runs for Runtime even after the region was
	// covered, looping over it. Requires Runtime: fio 3.33 silently runs a
	// single pass when time_based has no runtime.
	TimeBased bool
	// Runtime (runtime=) bounds the job's running time.
	Runtime time.Duration
	// RateIOPS (rate_iops=) caps the job's I/Os per second over reads and
	// writes together (0: uncapped). fio applies rate_iops per data
	// direction: its value is "reads[,writes[,trims]]" and a single value
	// caps reads and writes apart (fio HOWTO "rate", "rate_iops"), so a bare
	// rate_iops=100 on randrw lets 100 reads and 100 writes through each
	// second, 200 in all at 50/50 whatever rwmixread says. Render therefore
	// writes a mixed pattern's cap as its read,write split by RWMixRead (fio
	// default 50), reads rounded to the nearest I/O: 100 at rwmixread=70
	// renders rate_iops=70,30. Other patterns render the value alone. See
	// RateSplit.
	RateIOPS int
	// Thread (thread=1) runs the job as a thread of the fio process instead
	// of a forked process.
	Thread bool
	// ContinueOnError (continue_on_error=) makes fio continue after a
	// non-fatal error of the given types: "none", "read", "write", "io",
	// "verify", "all". What is non-fatal is IgnoreError's lists. With
	// continue_on_error the JSON result gains total_err and first_error.
	ContinueOnError string
	// IgnoreError (ignore_error=) lists the errnos treated as non-fatal.
	IgnoreError IgnoreErrors
	// ErrorDump (error_dump=1) makes fio print an "io_u error" line on
	// stderr for every error, non-fatal ones included. fio 3.33's default
	// is 0 (its HOWTO says 1), which hides ignored errors: the error
	// classification of this package reads those lines.
	ErrorDump bool
	// Verify (verify=) is the checksum fio writes into a header of every
	// block it writes and checks when it reads the block back: "md5",
	// "crc32c", ... A mismatch is printed as a verify report on stderr
	// (see ParseStderr).
	Verify string
	// VerifyBacklog (verify_backlog=) makes fio read back and verify every
	// N written blocks while the job runs, instead of only at its end.
	VerifyBacklog int
	// VerifyFatal (verify_fatal=1) ends the job at the first verify failure.
	VerifyFatal bool
	// VerifyDump (verify_dump=1) dumps the expected and received contents
	// of a failed block to files.
	VerifyDump bool
	// VerifyOnly (verify_only=1) skips the workload and only verifies data
	// a previous run of the same job wrote. Incompatible with time_based.
	VerifyOnly bool
	// DoVerify (do_verify=) runs the verify phase after a write phase
	// (fio default true).
	DoVerify *bool
	// VerifyStateSave (verify_state_save=) saves the verify state to
	// <type>-<job>-<index>-verify.state in the working directory when the
	// job exits during its write phase (fio default true).
	VerifyStateSave *bool
	// WriteLatLog (write_lat_log=) writes latency logs named
	// <prefix>_lat.N.log (total latency), _clat.N.log and _slat.N.log, N the
	// 1-based job number (see LatLogName). Per I/O unless LogAvgMsec.
	WriteLatLog string
	// LogAvgMsec (log_avg_msec=) averages log entries over windows of this
	// many ms, for the whole job and every log (fio default 0: one entry per
	// I/O). Windows with no completion are absent from a windowed log.
	LogAvgMsec int
	// LogOffset (log_offset=1) adds each I/O's byte offset to log entries.
	LogOffset bool
	// LogUnixEpoch (log_unix_epoch=1) writes log times as Unix epoch ms
	// instead of ms since the job started.
	LogUnixEpoch bool
	// LogAlternateEpoch (log_alternate_epoch=1) writes log times as ms of the
	// clock LogAlternateEpochClockID (clock_gettime clock id; 0 is
	// CLOCK_REALTIME, 1 CLOCK_MONOTONIC).
	LogAlternateEpoch        bool
	LogAlternateEpochClockID int
	// PerJobLogs (per_job_logs=) gives each job its own log file names
	// (fio default true); false makes same-named jobs share one file.
	PerJobLogs *bool
	// Extra options, rendered verbatim after the typed ones, in order.
	Extra []Option
}

// Validate reports a job fio would reject or run differently than asked.
func (j Job) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("job %q: "+format, append([]any{j.Name}, a...)...))
	}
	if j.Name == "" || strings.ContainsAny(j.Name, "[]\n\r") || strings.EqualFold(j.Name, "global") {
		bad("name must be non-empty, not \"global\", without brackets or newlines")
	}
	if j.Filename == "" {
		bad("filename is required")
	}
	for _, kv := range j.options() {
		if strings.ContainsAny(kv.Key, "\n\r=") || strings.ContainsAny(kv.Value, "\n\r") {
			bad("option %q: newline or '=' in key, or newline in value", kv.Key)
		}
	}
	if j.TimeBased && j.Runtime <= 0 {
		bad("time_based needs a runtime (fio 3.33 runs a single pass otherwise)")
	}
	if j.Runtime < 0 || j.RateIOPS < 0 || j.IODepth < 0 || j.NumJobs < 0 || j.Size < 0 || j.BlockSize < 0 || j.LogAvgMsec < 0 || j.VerifyBacklog < 0 {
		bad("negative value")
	}
	if j.RWMixRead < 0 || j.RWMixRead > 100 {
		bad("rwmixread %d outside 0..100", j.RWMixRead)
	} else if r, w, mixed := j.RateSplit(); mixed && j.RateIOPS > 0 && ((r == 0 && j.readMix() > 0) || (w == 0 && j.readMix() < 100)) {
		bad("rate_iops %d split %d,%d by rwmixread %d: fio reads a 0 cap as uncapped", j.RateIOPS, r, w, j.readMix())
	}
	if j.VerifyOnly && j.TimeBased {
		bad("verify_only does not support time_based (fio HOWTO)")
	}
	if (j.VerifyBacklog > 0 || j.VerifyOnly || j.VerifyFatal) && (j.Verify == "" || j.Verify == "0") {
		bad("verify_backlog/verify_only/verify_fatal need verify=")
	}
	if !j.IgnoreError.empty() && (j.ContinueOnError == "" || j.ContinueOnError == "none" || j.ContinueOnError == "0") {
		bad("ignore_error has no effect without continue_on_error")
	}
	if j.LogUnixEpoch && j.LogAlternateEpoch {
		bad("log_unix_epoch and log_alternate_epoch are exclusive")
	}
	return errors.Join(errs...)
}

// mixedRW reports whether rw= is a pattern mixing reads and writes
// (rwmixread applies).
func mixedRW(rw string) bool {
	switch rw {
	case "rw", "readwrite", "randrw":
		return true
	}
	return false
}

// readMix is the percentage of reads of a mixed pattern: RWMixRead, or
// fio's default 50 when unset.
func (j Job) readMix() int {
	if j.RWMixRead == 0 {
		return 50
	}
	return j.RWMixRead
}

// RateSplit returns the per-direction caps Render writes for RateIOPS:
// for a mixed pattern (rw, readwrite, randrw) reads = RateIOPS × rwmixread
// / 100 rounded to the nearest integer and writes = RateIOPS − reads, with
// mixed true; otherwise (0, 0, false) and RateIOPS is rendered alone.
func (j Job) RateSplit() (reads, writes int, mixed bool) {
	if !mixedRW(j.RW) {
		return 0, 0, false
	}
	reads = (j.RateIOPS*j.readMix() + 50) / 100
	return reads, j.RateIOPS - reads, true
}

func boolOpt(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// options lists the job's options in render order, each with its fio
// meaning (fio HOWTO) as Doc.
func (j Job) options() []Option {
	var o []Option
	add := func(key, value, doc string) { o = append(o, Option{Key: key, Value: value, Doc: doc}) }
	if j.Description != "" {
		add("description", j.Description, "free text fio prints with the job")
	}
	if j.Filename != "" {
		add("filename", strings.ReplaceAll(j.Filename, ":", `\:`), "file the job does I/O to (':' escaped: fio splits file lists on it)")
	}
	if j.IOEngine != "" {
		add("ioengine", j.IOEngine, "how I/O is issued; libaio = Linux native async I/O (io_submit/io_getevents), psync = pread/pwrite")
	}
	if j.Direct {
		add("direct", "1", "O_DIRECT: bypass the page cache, every I/O reaches the device when issued")
	}
	if j.RW != "" {
		add("rw", j.RW, "I/O pattern: read, write, randread, randwrite, rw (mixed), randrw (random mixed)")
	}
	if j.RWMixRead != 0 {
		add("rwmixread", strconv.Itoa(j.RWMixRead), "percentage of reads in the mix")
	}
	if j.BlockSize != 0 {
		add("bs", j.BlockSize.String(), "size of each I/O (k = 1024 bytes)")
	}
	if j.IODepth != 0 {
		add("iodepth", strconv.Itoa(j.IODepth), "I/Os kept in flight")
	}
	if j.NumJobs != 0 {
		add("numjobs", strconv.Itoa(j.NumJobs), "clones of this job (processes)")
	}
	if j.Size != 0 {
		add("size", j.Size.String(), "region of the file the job covers (laid out first if the file is smaller)")
	}
	if j.TimeBased {
		add("time_based", "1", "run for runtime, looping over the region, instead of stopping after one pass")
	}
	if j.Runtime != 0 {
		add("runtime", fioDuration(j.Runtime), "how long the job runs")
	}
	if j.RateIOPS != 0 {
		if r, w, mixed := j.RateSplit(); mixed {
			add("rate_iops", strconv.Itoa(r)+","+strconv.Itoa(w), fmt.Sprintf("cap on reads,writes per second: %d in all split %d/%d (fio caps each direction apart)", j.RateIOPS, j.readMix(), 100-j.readMix()))
		} else {
			add("rate_iops", strconv.Itoa(j.RateIOPS), "cap on I/Os per second")
		}
	}
	if j.Thread {
		add("thread", "1", "run the job as a thread of the fio process, not a forked process")
	}
	if j.ContinueOnError != "" {
		add("continue_on_error", j.ContinueOnError, "keep running after non-fatal errors of these types (all = read, write, verify); adds total_err/first_error to the JSON result")
	}
	if !j.IgnoreError.empty() {
		add("ignore_error", j.IgnoreError.String(), "errnos treated as non-fatal: READ,WRITE,VERIFY lists, ':' within a list; replaces fio's default {5 EIO, 84 EILSEQ}")
	}
	if j.ErrorDump {
		add("error_dump", "1", "print an io_u error line on stderr for every error, ignored ones included (fio 3.33 default 0)")
	}
	if j.Verify != "" {
		add("verify", j.Verify, "checksum written into a header of every block and checked when the block is read back; mismatches are reported on stderr")
	}
	if j.VerifyBacklog != 0 {
		add("verify_backlog", strconv.Itoa(j.VerifyBacklog), "read back and verify every N written blocks while running, not only at the end")
	}
	if j.VerifyFatal {
		add("verify_fatal", "1", "end the job at the first verify failure")
	}
	if j.VerifyDump {
		add("verify_dump", "1", "dump expected and received contents of a failed block to files")
	}
	if j.VerifyOnly {
		add("verify_only", "1", "do not run the workload, only verify data a previous run wrote")
	}
	if j.DoVerify != nil {
		add("do_verify", boolOpt(*j.DoVerify), "run the verify phase after the write phase (fio default 1)")
	}
	if j.VerifyStateSave != nil {
		add("verify_state_save", boolOpt(*j.VerifyStateSave), "save verify state to <type>-<job>-<n>-verify.state on exit (fio default 1)")
	}
	if j.WriteLatLog != "" {
		add("write_lat_log", j.WriteLatLog, "latency logs <prefix>_lat.N.log (total), _clat.N.log, _slat.N.log; value = latency in ns")
	}
	if j.LogAvgMsec != 0 {
		add("log_avg_msec", strconv.Itoa(j.LogAvgMsec), "average log entries over windows of N ms (whole job, every log); 0 = one entry per I/O")
	}
	if j.LogOffset {
		add("log_offset", "1", "add each I/O's byte offset to log entries")
	}
	if j.LogUnixEpoch {
		add("log_unix_epoch", "1", "log times are Unix epoch ms, not ms since job start")
	}
	if j.LogAlternateEpoch {
		add("log_alternate_epoch", "1", "log times are ms of clock log_alternate_epoch_clock_id")
		add("log_alternate_epoch_clock_id", strconv.Itoa(j.LogAlternateEpochClockID), "clock_gettime clock for log times (0 CLOCK_REALTIME, 1 CLOCK_MONOTONIC)")
	}
	if j.PerJobLogs != nil {
		add("per_job_logs", boolOpt(*j.PerJobLogs), "one log file per job (fio default 1)")
	}
	o = append(o, j.Extra...)
	return o
}

// JobFile is a fio job file: a header comment and job sections, without a
// [global] section (every job spells its options out).
type JobFile struct {
	// Comment lines rendered at the top, each prefixed by "; ".
	Comment []string
	Jobs    []Job
	// Documented renders each option's fio meaning as a comment line
	// above it.
	Documented bool
}

// Validate validates every job, and that job names are unique.
func (f JobFile) Validate() error {
	if len(f.Jobs) == 0 {
		return errors.New("job file has no jobs")
	}
	var errs []error
	seen := map[string]bool{}
	for _, j := range f.Jobs {
		errs = append(errs, j.Validate())
		if seen[j.Name] {
			errs = append(errs, fmt.Errorf("job %q: duplicate job name", j.Name))
		}
		seen[j.Name] = true
	}
	return errors.Join(errs...)
}

// Render writes the job file in fio's ini format. It validates first and
// writes nothing on a validation error.
func (f JobFile) Render(w io.Writer) error {
	if err := f.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, c := range f.Comment {
		for _, line := range strings.Split(c, "\n") {
			fmt.Fprintf(bw, "; %s\n", line)
		}
	}
	for i, j := range f.Jobs {
		if i > 0 || len(f.Comment) > 0 {
			bw.WriteString("\n")
		}
		fmt.Fprintf(bw, "[%s]\n", j.Name)
		for _, o := range j.options() {
			if f.Documented && o.Doc != "" {
				fmt.Fprintf(bw, "; %s\n", o.Doc)
			}
			if o.Value == "" {
				fmt.Fprintf(bw, "%s\n", o.Key)
			} else {
				fmt.Fprintf(bw, "%s=%s\n", o.Key, o.Value)
			}
		}
	}
	return bw.Flush()
}

// String renders the job file; on a validation error it returns "" (use
// Render to see the error).
func (f JobFile) String() string {
	var b strings.Builder
	if err := f.Render(&b); err != nil {
		return ""
	}
	return b.String()
}

// Args are fio's command-line arguments to run jobFile with its JSON+
// result written to output (--output=, never stdout, so nothing else fio
// prints can corrupt it). fio still prints io_u error lines and verify
// reports on stderr: capture stderr to a file for ParseStderr.
func Args(jobFile, output string) []string {
	return []string{"--output-format=json+", "--output=" + output, jobFile}
}

// LatLogName is the total-latency log fio writes for write_lat_log=prefix
// as job number n (1-based, counting every job and numjobs clone of the job
// file in order): "<prefix>_lat.<n>.log" (fio iolog.c, per_job_logs=1).
func LatLogName(prefix string, n int) string {
	return prefix + "_lat." + strconv.Itoa(n) + ".log"
}

// MigrationIgnoredErrnos are the errnos the default migration workload keeps
// running through (read and write): fio's own non-fatal pair (EIO, EILSEQ,
// which an ignore_error list would otherwise drop) and what a host returns
// when a volume's paths go away — ENOLINK (BLK_STS_TRANSPORT, the NVMe host
// path error), EREMOTEIO (BLK_STS_TARGET), ETIMEDOUT, ENODEV (BLK_STS_OFFLINE)
// and ENOTCONN (a FUSE file whose daemon is gone). ENOSPC and EROFS are left
// fatal on purpose: they are not a migration's pause.
var MigrationIgnoredErrnos = []Errno{EIO, EILSEQ, ENOLINK, EREMOTEIO, ENOTCONN, ETIMEDOUT, ENODEV}

// MigrationWorkload is the default workload fiomig runs on every volume
// during migrations: libaio, O_DIRECT, 4 KiB random I/O with 70 % reads,
// iodepth 1, one job over a 1 GiB file, time based for runtime; it keeps
// running through path-loss errors (continue_on_error=all with
// MigrationIgnoredErrnos, every error printed), verifies md5 checksums of
// what it wrote every 64 blocks, and logs every I/O's total latency with its
// offset and a Unix-epoch ms completion time to <logPrefix>_lat.1.log, so
// gaps can be placed on the run's timeline. Run it with Args.
func MigrationWorkload(name, filename, logPrefix string, runtime time.Duration) Job {
	no := false
	ignored := append([]Errno(nil), MigrationIgnoredErrnos...)
	return Job{
		Name:            name,
		Filename:        filename,
		IOEngine:        "libaio",
		Direct:          true,
		RW:              "randrw",
		RWMixRead:       70,
		BlockSize:       4 * KiB,
		IODepth:         1,
		NumJobs:         1,
		Size:            1 * GiB,
		TimeBased:       true,
		Runtime:         runtime,
		ContinueOnError: "all",
		IgnoreError:     IgnoreErrors{Read: ignored, Write: ignored, Verify: []Errno{EIO, EILSEQ}},
		ErrorDump:       true,
		Verify:          "md5",
		VerifyBacklog:   64,
		VerifyStateSave: &no,
		WriteLatLog:     logPrefix,
		LogOffset:       true,
		LogUnixEpoch:    true,
	}
}

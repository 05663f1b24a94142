package fio

import (
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strings"
)

// Gap is an interval with no I/O completion, on the log's time axis (ms).
// A gap runs from the completion before it to the completion after it;
// with a window given, the window's edges close gaps at either end (Open).
type Gap struct {
	StartMs int64 `json:"start_ms"`
	EndMs   int64 `json:"end_ms"`
	// Open is true when one end is the window's edge rather than a
	// completion: I/O stalled before the first or after the last completion
	// (e.g. fio hung until it was stopped).
	Open bool `json:"open,omitempty"`
}

// Seconds is the gap's length in seconds.
func (g Gap) Seconds() float64 { return float64(g.EndMs-g.StartMs) / 1000 }

// RunSeconds places the gap on a run's timeline: its start and end in
// seconds since runStartMs (same time axis as the log: with
// log_unix_epoch, the run's start as Unix epoch ms).
func (g Gap) RunSeconds(runStartMs int64) (start, end float64) {
	return float64(g.StartMs-runStartMs) / 1000, float64(g.EndMs-runStartMs) / 1000
}

// GapOptions tune the completion analysis.
type GapOptions struct {
	// Window makes StartMs and EndMs bound the analysis on the log's time
	// axis (inclusive); without it the window is the first to the last
	// completion. Completions outside the window are counted in Outside
	// only; a window edge with no completion at it closes an Open gap.
	Window         bool
	StartMs, EndMs int64
	// MinGapMs: gaps at least this long are listed in Gaps (default 1000).
	MinGapMs int64
	// MaxSpanMs bounds the time the completions may span (default 72 h):
	// the analysis keeps one bit per ms of it (450 KB per hour).
	MaxSpanMs int64
}

// GapAnalysis is what a job's per-I/O log says about when I/O completed.
// Failed I/Os are not in fio's latency logs (fio accounts only successful
// completions), so an error burst shows as a gap too.
type GapAnalysis struct {
	Completions int64    `json:"completions"` // in the window
	ByDir       [3]int64 `json:"by_dir"`      // completions per Direction
	Outside     int64    `json:"outside"`     // completions outside the window
	// FirstMs/LastMs: first and last completion in the window; StartMs/
	// EndMs: the window analysed.
	FirstMs int64 `json:"first_ms"`
	LastMs  int64 `json:"last_ms"`
	StartMs int64 `json:"start_ms"`
	EndMs   int64 `json:"end_ms"`
	// LongestGap is the longest interval without a completion (zero Gap
	// when the window holds fewer than two completions and no edges).
	LongestGap Gap `json:"longest_gap"`
	// Gaps lists every gap of at least MinGapMs, in time order.
	Gaps []Gap `json:"gaps"`
	// ZeroSeconds counts whole seconds of the log's time axis
	// ([k*1000, k*1000+999] ms) inside the window with no completion.
	ZeroSeconds int `json:"zero_seconds"`
	// PerSecond[i] is the number of completions in second
	// PerSecondBaseMs/1000 + i of the log's time axis, over the window.
	PerSecond       []uint32 `json:"per_second"`
	PerSecondBaseMs int64    `json:"per_second_base_ms"`
}

// growable is a slice indexed by int64 positions, growing at either end.
type growable[T any] struct {
	base int64
	v    []T
}

func (g *growable[T]) at(i int64) *T {
	if len(g.v) == 0 {
		g.base = i
		g.v = make([]T, 1, 1024)
	}
	if i < g.base {
		extra := max(g.base-i, int64(len(g.v)))
		nv := make([]T, int64(len(g.v))+extra, int64(cap(g.v))+extra)
		copy(nv[extra:], g.v)
		g.v = nv
		g.base -= extra
	}
	if idx := i - g.base; idx >= int64(len(g.v)) {
		g.v = append(g.v, make([]T, idx-int64(len(g.v))+1)...)
	}
	return &g.v[i-g.base]
}

// Completions accumulates completion times in any order, streaming: one bit
// per ms of the span plus a counter per second, never the entries.
type Completions struct {
	opts      GapOptions
	bits      growable[uint64] // bit t%64 of word t/64: a completion at ms t
	perSecond growable[uint32]
	n         int64
	byDir     [3]int64
	outside   int64
	min, max  int64
}

// NewCompletions returns an empty accumulator.
func NewCompletions(opts GapOptions) *Completions {
	if opts.MinGapMs <= 0 {
		opts.MinGapMs = 1000
	}
	if opts.MaxSpanMs <= 0 {
		opts.MaxSpanMs = 72 * 3600 * 1000
	}
	return &Completions{opts: opts}
}

// Add records one completion at timeMs (>= 0). It fails when the
// completions would span more than MaxSpanMs.
func (c *Completions) Add(timeMs int64, dir Direction) error {
	if timeMs < 0 {
		return fmt.Errorf("completion time %d ms is negative", timeMs)
	}
	if c.opts.Window && (timeMs < c.opts.StartMs || timeMs > c.opts.EndMs) {
		c.outside++
		return nil
	}
	if c.n == 0 {
		c.min, c.max = timeMs, timeMs
	}
	lo, hi := min(c.min, timeMs), max(c.max, timeMs)
	if hi-lo > c.opts.MaxSpanMs {
		return fmt.Errorf("completion at %d ms makes the log span %d ms, more than %d ms (wrong time axis?)", timeMs, hi-lo, c.opts.MaxSpanMs)
	}
	c.min, c.max = lo, hi
	*c.bits.at(timeMs / 64) |= 1 << uint(timeMs%64)
	*c.perSecond.at(timeMs / 1000)++
	c.n++
	if int(dir) < len(c.byDir) {
		c.byDir[dir]++
	}
	return nil
}

// Result computes the analysis of what was added.
func (c *Completions) Result() GapAnalysis {
	a := GapAnalysis{Completions: c.n, ByDir: c.byDir, Outside: c.outside, FirstMs: c.min, LastMs: c.max}
	a.StartMs, a.EndMs = c.min, c.max
	if c.opts.Window {
		a.StartMs, a.EndMs = c.opts.StartMs, c.opts.EndMs
	}
	if c.n == 0 {
		a.FirstMs, a.LastMs = 0, 0
		if c.opts.Window && c.opts.EndMs > c.opts.StartMs {
			a.LongestGap = Gap{StartMs: a.StartMs, EndMs: a.EndMs, Open: true}
			a.Gaps = a.addGap(nil, a.LongestGap, c.opts.MinGapMs)
		}
		a.ZeroSeconds = zeroSeconds(a.StartMs, a.EndMs, func(int64) uint32 { return 0 })
		return a
	}
	// Walk the set bits in time order.
	prev := a.StartMs
	prevIsEdge := c.opts.Window && c.opts.StartMs < c.min
	first := true
	for w, word := range c.bits.v {
		for word != 0 {
			b := int64(bits.TrailingZeros64(word))
			word &= word - 1
			t := (c.bits.base+int64(w))*64 + b
			if first {
				first = false
				if prevIsEdge {
					a.consider(Gap{StartMs: prev, EndMs: t, Open: true}, c.opts.MinGapMs)
				}
				prev = t
				continue
			}
			a.consider(Gap{StartMs: prev, EndMs: t}, c.opts.MinGapMs)
			prev = t
		}
	}
	if c.opts.Window && c.opts.EndMs > c.max {
		a.consider(Gap{StartMs: c.max, EndMs: c.opts.EndMs, Open: true}, c.opts.MinGapMs)
	}
	base := a.StartMs / 1000
	a.PerSecondBaseMs = base * 1000
	last := a.EndMs / 1000
	a.PerSecond = make([]uint32, last-base+1)
	for s := base; s <= last; s++ {
		if i := s - c.perSecond.base; i >= 0 && i < int64(len(c.perSecond.v)) {
			a.PerSecond[s-base] = c.perSecond.v[i]
		}
	}
	a.ZeroSeconds = zeroSeconds(a.StartMs, a.EndMs, func(s int64) uint32 { return a.PerSecond[s-base] })
	return a
}

func (a *GapAnalysis) consider(g Gap, minGap int64) {
	if g.EndMs-g.StartMs > a.LongestGap.EndMs-a.LongestGap.StartMs {
		a.LongestGap = g
	}
	a.Gaps = a.addGap(a.Gaps, g, minGap)
}

func (a *GapAnalysis) addGap(gaps []Gap, g Gap, minGap int64) []Gap {
	if g.EndMs-g.StartMs >= minGap {
		gaps = append(gaps, g)
	}
	return gaps
}

// zeroSeconds counts seconds s whose whole span [s*1000, s*1000+999] lies
// in [start, end] and whose count is 0.
func zeroSeconds(start, end int64, count func(s int64) uint32) int {
	n := 0
	for s := (start + 999) / 1000; s*1000+999 <= end; s++ {
		if count(s) == 0 {
			n++
		}
	}
	return n
}

// AnalyzeLog streams a fio per-I/O latency log (see LogReader) into a
// GapAnalysis; name is used in errors. A windowed log (log_avg_msec) works
// too, with the window as resolution: windows without completions are
// absent from it, so they show as gaps. On a *TruncatedError (last line cut
// off) it returns the analysis of the complete lines with the error.
func AnalyzeLog(r io.Reader, name string, opts GapOptions) (GapAnalysis, error) {
	c := NewCompletions(opts)
	lr := NewLogReader(r, name)
	for lr.Scan() {
		e := lr.Entry()
		if err := c.Add(e.TimeMs, e.Dir); err != nil {
			return GapAnalysis{}, &ParseError{Name: name, Line: lr.Line(), Msg: "completion time", Err: err}
		}
	}
	if err := lr.Err(); err != nil {
		if _, ok := err.(*TruncatedError); ok {
			return c.Result(), err
		}
		return GapAnalysis{}, err
	}
	return c.Result(), nil
}

// AnalyzeLogFile is AnalyzeLog on the file at path.
func AnalyzeLogFile(path string, opts GapOptions) (GapAnalysis, error) {
	f, err := os.Open(path)
	if err != nil {
		return GapAnalysis{}, err
	}
	defer f.Close()
	return AnalyzeLog(f, path, opts)
}

// ParseResultFile is ParseResult on the file at path.
func ParseResultFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseResult(f, path)
}

// ParseStderrFile is ParseStderr on the file at path.
func ParseStderrFile(path string) (*StderrReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseStderr(f, path)
}

// ErrnoCount is how many I/Os of a job failed with one errno.
type ErrnoCount struct {
	Errno Errno      `json:"errno"`
	Name  string     `json:"name"` // "EREMOTEIO"; "" for errno 0 (a text fio printed that is no known errno)
	Class ErrorClass `json:"class"`
	Count int64      `json:"count"`
}

// JobAnalysis is one fio job's verdict material: when its I/O stalled, how
// its I/O failed, and whether its data was corrupted.
type JobAnalysis struct {
	Job  string `json:"job"`
	File string `json:"file"`
	// Gaps is the completion analysis of the job's per-I/O log.
	Gaps GapAnalysis `json:"gaps"`
	// Errors are the job's io_u errors by errno (sorted by errno), from
	// fio's stderr; ErrorsByClass the same by class; IOErrors their total.
	Errors        []ErrnoCount         `json:"errors"`
	ErrorsByClass map[ErrorClass]int64 `json:"errors_by_class"`
	IOErrors      int64                `json:"io_errors"`
	// VerifyFailures are the data-integrity failures fio's verify reported
	// for the job's file, with their offsets.
	VerifyFailures []VerifyFailure `json:"verify_failures"`
	// TotalErr, FirstError and ExitError are fio's own counts from the JSON
	// result (total_err needs continue_on_error).
	TotalErr   int64 `json:"total_err"`
	FirstError Errno `json:"first_error"`
	ExitError  Errno `json:"exit_error"`
	// Unreported is TotalErr minus the errors fio printed a line for
	// (io_u errors and verify failures), when positive: errors fio counted
	// but did not print (error_dump=0), unclassifiable.
	Unreported int64 `json:"unreported"`
}

// DataIntegrityFailure reports whether fio's verify found corrupted data.
func (j JobAnalysis) DataIntegrityFailure() bool { return len(j.VerifyFailures) > 0 }

// JobFile is the file a job result did I/O to: its "filename" job option
// (or global option), fio's ':' escapes undone; "" when not given.
func (r *Result) JobFile(job *JobResult) string {
	f, ok := job.Options["filename"]
	if !ok {
		f = r.GlobalOptions["filename"]
	}
	return strings.ReplaceAll(f, `\:`, ":")
}

// AnalyzeJob joins a job's JSON result (may be nil), its completion
// analysis and fio's stderr report (may be nil) for the job's file. file
// selects the io_u errors and verify failures of the job; "" takes them all
// (one job per fio process).
func AnalyzeJob(name, file string, res *JobResult, gaps GapAnalysis, rep *StderrReport) JobAnalysis {
	ja := JobAnalysis{Job: name, File: file, Gaps: gaps, ErrorsByClass: map[ErrorClass]int64{}}
	if res != nil {
		ja.TotalErr, ja.FirstError, ja.ExitError = res.TotalErr, res.FirstError, res.Error
	}
	if rep != nil {
		byErrno := map[Errno]int64{}
		for _, e := range rep.IOErrors {
			if file != "" && e.File != file {
				continue
			}
			byErrno[e.Errno] += e.Count
			ja.IOErrors += e.Count
		}
		for errno, n := range byErrno {
			name := ""
			if errno != 0 {
				name = errno.String()
			}
			ja.Errors = append(ja.Errors, ErrnoCount{Errno: errno, Name: name, Class: errno.Class(), Count: n})
			ja.ErrorsByClass[errno.Class()] += n
		}
		sort.Slice(ja.Errors, func(i, j int) bool { return ja.Errors[i].Errno < ja.Errors[j].Errno })
		for _, v := range rep.VerifyFailures {
			if file == "" || v.File == file {
				ja.VerifyFailures = append(ja.VerifyFailures, v)
			}
		}
		if n := int64(len(ja.VerifyFailures)); n > 0 {
			ja.ErrorsByClass[ClassIntegrity] += n
		}
	}
	if u := ja.TotalErr - ja.IOErrors - int64(len(ja.VerifyFailures)); u > 0 {
		ja.Unreported = u
	}
	return ja
}

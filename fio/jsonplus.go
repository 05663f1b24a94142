package fio

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
)

// Result is one fio --output-format=json+ document (fio 3.x, stat.c
// show_run_stats / json_add_job_opts).
type Result struct {
	FioVersion string `json:"fio version"` // "fio-3.33"
	// Timestamp is when fio wrote the result, Unix seconds; TimestampMs the
	// same in ms.
	Timestamp     int64             `json:"timestamp"`
	TimestampMs   int64             `json:"timestamp_ms"`
	Time          string            `json:"time"` // ctime(3) text of Timestamp
	GlobalOptions map[string]string `json:"global options"`
	Jobs          []JobResult       `json:"jobs"`

	// Preamble holds the non-JSON lines fio printed into the output file
	// before the document (option warnings such as "note: both iodepth >= 1
	// and synchronous I/O engine are selected"; job-file errors).
	Preamble []string `json:"-"`
	// Documents is how many complete JSON documents the output held: more
	// than one when fio ran with --status-interval (this Result is the last).
	Documents int `json:"-"`
}

// JobResult is one job's "jobs" entry.
type JobResult struct {
	Name    string `json:"jobname"`
	GroupID int    `json:"groupid"`
	// Error is the errno the job ended with (td->error; 0 = none). With
	// continue_on_error it is the first error. EILSEQ (84) here is not proof
	// of a verify failure: see ParseStderr.
	Error Errno `json:"error"`
	// ElapsedS is the job's wall time in seconds, JobRuntimeMs the time it
	// spent doing I/O, ms.
	ElapsedS     int64 `json:"elapsed"`
	JobRuntimeMs int64 `json:"job_runtime"`
	// JobStartMs is the job's start, Unix epoch ms (fio >= 3.35 "job_start";
	// 0 when absent).
	JobStartMs int64 `json:"job_start"`
	// TotalErr and FirstError are present with continue_on_error: every
	// error counted (I/O and verify) and the first errno.
	TotalErr   int64             `json:"total_err"`
	FirstError Errno             `json:"first_error"`
	Options    map[string]string `json:"job options"`
	Read       DirResult         `json:"read"`
	Write      DirResult         `json:"write"`
	Trim       DirResult         `json:"trim"`
}

// DirResult is a job's statistics for one data direction (read, write or
// trim). fio counts verify reads as reads.
type DirResult struct {
	IOBytes   int64   `json:"io_bytes"`  // bytes transferred
	BWBytes   int64   `json:"bw_bytes"`  // bytes per second
	IOPS      float64 `json:"iops"`      // I/Os per second
	RuntimeMs int64   `json:"runtime"`   // ms
	TotalIOs  int64   `json:"total_ios"` // completed I/Os
	ShortIOs  int64   `json:"short_ios"`
	DropIOs   int64   `json:"drop_ios"`
	Slat      Latency `json:"slat_ns"` // submission latency
	Clat      Latency `json:"clat_ns"` // completion latency (submit to complete)
	Lat       Latency `json:"lat_ns"`  // total latency
}

// Latency is one latency statistic, nanoseconds. Percentiles are present
// only where fio reports them (clat by default) and only for N > 0; Bins
// only with json+ (fio's histogram: bin value in ns -> count, only nonempty
// bins).
type Latency struct {
	MinNs       int64
	MaxNs       int64
	MeanNs      float64
	StddevNs    float64
	N           int64
	Percentiles []Percentile // sorted by Pct
	Bins        []Bin        // sorted by Ns
}

// Percentile: Pct percent of I/Os completed within Ns nanoseconds.
type Percentile struct {
	Pct float64
	Ns  int64
}

// Bin is a json+ histogram bin: Count I/Os with a latency in fio's bucket
// whose value is Ns nanoseconds.
type Bin struct {
	Ns    int64
	Count int64
}

// UnmarshalJSON reads fio's {"min","max","mean","stddev","N","percentile":
// {"99.000000":n},"bins":{"836":n}}.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var raw struct {
		Min        int64            `json:"min"`
		Max        int64            `json:"max"`
		Mean       float64          `json:"mean"`
		Stddev     float64          `json:"stddev"`
		N          int64            `json:"N"`
		Percentile map[string]int64 `json:"percentile"`
		Bins       map[string]int64 `json:"bins"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*l = Latency{MinNs: raw.Min, MaxNs: raw.Max, MeanNs: raw.Mean, StddevNs: raw.Stddev, N: raw.N}
	for k, v := range raw.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil {
			return fmt.Errorf("percentile key %q: %w", k, err)
		}
		l.Percentiles = append(l.Percentiles, Percentile{Pct: p, Ns: v})
	}
	sort.Slice(l.Percentiles, func(i, j int) bool { return l.Percentiles[i].Pct < l.Percentiles[j].Pct })
	for k, v := range raw.Bins {
		ns, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return fmt.Errorf("bin key %q: %w", k, err)
		}
		l.Bins = append(l.Bins, Bin{Ns: ns, Count: v})
	}
	slices.SortFunc(l.Bins, func(a, b Bin) int { return cmp.Compare(a.Ns, b.Ns) })
	return nil
}

// BinsTotal is the number of I/Os in the json+ bins (equals N when fio
// wrote bins).
func (l Latency) BinsTotal() int64 {
	var n int64
	for _, b := range l.Bins {
		n += b.Count
	}
	return n
}

// Percentile returns the latency at percentile pct (as fio listed it, e.g.
// 99.9), ok false when fio did not report it.
func (l Latency) Percentile(pct float64) (ns int64, ok bool) {
	for _, p := range l.Percentiles {
		if p.Pct == pct {
			return p.Ns, true
		}
	}
	return 0, false
}

// Job returns the job result named name.
func (r *Result) Job(name string) (*JobResult, bool) {
	for i := range r.Jobs {
		if r.Jobs[i].Name == name {
			return &r.Jobs[i], true
		}
	}
	return nil, false
}

// lineIndex counts lines of what passes through it, so byte offsets of the
// JSON decoder can be turned into line numbers. It keeps the offsets of the
// newlines not yet pruned (those of the document being decoded), so a long
// --status-interval output does not accumulate them.
type lineIndex struct {
	r        io.Reader
	read     int64   // bytes read so far
	pruned   int     // newlines before newlines[0]
	newlines []int64 // stream offsets of the '\n's read and not pruned
}

func (li *lineIndex) Read(p []byte) (int, error) {
	n, err := li.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			li.newlines = append(li.newlines, li.read+int64(i))
		}
	}
	li.read += int64(n)
	return n, err
}

// line is the 1-based line of stream offset off (not before the last prune).
func (li *lineIndex) line(off int64) int {
	return li.pruned + sort.Search(len(li.newlines), func(i int) bool { return li.newlines[i] >= off }) + 1
}

// prune forgets the newlines before stream offset off.
func (li *lineIndex) prune(off int64) {
	i := sort.Search(len(li.newlines), func(i int) bool { return li.newlines[i] >= off })
	li.pruned += i
	li.newlines = append(li.newlines[:0], li.newlines[i:]...)
}

// ParseResult reads fio's --output-format=json+ (or json) output from r;
// name is used in errors. It skips non-JSON lines before the first document
// (kept in Preamble), reads every document in the stream and returns the
// last complete one. Errors: *ParseError (with line) for malformed JSON or
// a wrong field type; *TruncatedError (errors.Is(err, ErrTruncated)) when
// the stream ends inside a document or holds none — then the returned
// Result is the last complete document, or nil.
func ParseResult(r io.Reader, name string) (*Result, error) {
	li := &lineIndex{r: r}
	br := bufio.NewReaderSize(li, 64<<10)
	var preamble []string
	var consumed int64 // bytes before the first document
	for {
		line, err := peekLine(br)
		if len(line) == 0 && err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, &ParseError{Name: name, Line: li.line(consumed), Msg: "reading", Err: err}
			}
			break
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
			break
		} else if len(t) > 0 {
			preamble = append(preamble, string(t))
		}
		n, _ := br.Discard(len(line))
		consumed += int64(n)
	}

	dec := json.NewDecoder(br)
	var last *Result
	docs := 0
	for {
		var res Result
		err := dec.Decode(&res)
		if err == nil {
			docs++
			res.Preamble = preamble
			res.Documents = docs
			last = &res
			li.prune(consumed + dec.InputOffset())
			continue
		}
		if errors.Is(err, io.EOF) {
			if docs == 0 && len(preamble) > 0 {
				return nil, &ParseError{Name: name, Line: 1, Msg: fmt.Sprintf("no JSON result, only text (fio failed before running?): %q", preamble[0])}
			}
			if docs == 0 {
				return nil, &TruncatedError{Name: name, Line: 1, Bytes: consumed, What: "JSON document"}
			}
			return last, nil
		}
		off := consumed + dec.InputOffset()
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return last, &TruncatedError{Name: name, Line: li.line(li.read), Bytes: li.read, What: fmt.Sprintf("JSON document %d", docs+1)}
		case errors.As(err, &syn):
			off = consumed + syn.Offset
		case errors.As(err, &typ):
			off = consumed + typ.Offset
		}
		return last, &ParseError{Name: name, Line: li.line(off), Msg: "malformed fio JSON", Err: err}
	}
}

// peekLine returns the next line (with its '\n') without consuming it, or
// as much as is buffered when the line is longer than the buffer.
func peekLine(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(min(n*256, br.Size()))
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[:i+1], nil
		}
		if err != nil || len(b) == br.Size() {
			return b, err
		}
	}
}

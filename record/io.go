package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// File names inside a run directory (DESIGN.md "The run record").
const (
	PlanFile     = "plan.json"
	TimelineFile = "timeline.jsonl"
	SummaryFile  = "summary.json"
)

// CreateRunDir creates parent/fio-mig-<unixSeconds>, or the first free
// fio-mig-<unixSeconds>-2, -3, ... when the name is taken, and returns its path.
// parent is created when missing.
func CreateRunDir(parent string, unixSeconds int64) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create output directory: %w", err)
	}
	base := "fio-mig-" + strconv.FormatInt(unixSeconds, 10)
	for i := 1; i < 10000; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create run directory: %w", err)
		}
	}
	return "", fmt.Errorf("create run directory: every name %s-N under %s is taken", base, parent)
}

// WriteJSON writes v as indented JSON with a trailing newline to path,
// through a temporary file renamed into place. Equal values give equal bytes.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	b = append(b, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadPlan reads plan.json. Errors name the file.
func ReadPlan(path string) (Plan, error) {
	var p Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read plan: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	if p.Params.SampleIntervalS <= 0 {
		return p, fmt.Errorf("%s: params.sample_interval_s must be > 0, got %v", path, p.Params.SampleIntervalS)
	}
	return p, nil
}

// TimelineWriter appends lines to timeline.jsonl. Each Append is one write
// of one complete line to the file, unbuffered, so a killed run keeps every
// line appended before it died. Times are rounded to the microsecond.
type TimelineWriter struct {
	w    io.Writer
	c    io.Closer
	buf  bytes.Buffer
	enc  *json.Encoder
	path string
}

// CreateTimeline creates (or truncates) path for appending timeline lines.
func CreateTimeline(path string) (*TimelineWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create timeline: %w", err)
	}
	tw := NewTimelineWriter(f, path)
	tw.c = f
	return tw, nil
}

// NewTimelineWriter appends timeline lines to w (io.Discard for benchmarks);
// name is used in errors.
func NewTimelineWriter(w io.Writer, name string) *TimelineWriter {
	tw := &TimelineWriter{w: w, path: name}
	tw.enc = json.NewEncoder(&tw.buf)
	tw.enc.SetEscapeHTML(false)
	return tw
}

// RoundT rounds a time in seconds to the microsecond, the timeline's resolution.
func RoundT(t float64) float64 { return math.Round(t*1e6) / 1e6 }

// Append writes one line. It rejects a line without kind.
func (tw *TimelineWriter) Append(l Line) error {
	if l.Kind == "" {
		return fmt.Errorf("%s: timeline line at t=%v has no kind", tw.path, l.T)
	}
	l.T = RoundT(l.T)
	tw.buf.Reset()
	if err := tw.enc.Encode(l); err != nil {
		return fmt.Errorf("%s: encode %s line: %w", tw.path, l.Kind, err)
	}
	if _, err := tw.w.Write(tw.buf.Bytes()); err != nil {
		return fmt.Errorf("%s: append: %w", tw.path, err)
	}
	return nil
}

// Close closes the underlying file, if the writer opened one.
func (tw *TimelineWriter) Close() error {
	if tw.c == nil {
		return nil
	}
	return tw.c.Close()
}

// ErrTruncated marks a timeline whose last line is incomplete (the run was
// killed while writing it). The lines before it are returned with it.
var ErrTruncated = errors.New("last line is truncated")

// ScanTimeline reads timeline lines from r one by one and calls fn for each.
// name is used in errors, which carry "name:line: ...". A final line with
// no newline that does not parse gives an error wrapping ErrTruncated.
func ScanTimeline(r io.Reader, name string, fn func(Line) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if complete {
				continue
			}
			return nil
		}
		var l Line
		if jerr := json.Unmarshal(b, &l); jerr != nil {
			if !complete {
				return fmt.Errorf("%s:%d: %w: %v", name, n, ErrTruncated, jerr)
			}
			return fmt.Errorf("%s:%d: not a JSON timeline line: %w", name, n, jerr)
		}
		if l.Kind == "" {
			return fmt.Errorf("%s:%d: line has no \"kind\"", name, n)
		}
		if math.IsNaN(l.T) || l.T < 0 {
			return fmt.Errorf("%s:%d: field \"t\" must be seconds >= 0, got %v", name, n, l.T)
		}
		if err := fn(l); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if !complete {
			return nil
		}
	}
}

// ReadTimeline reads a whole timeline.jsonl. On error it returns the lines
// read before the bad one as well.
func ReadTimeline(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	var lines []Line
	err = ScanTimeline(f, path, func(l Line) error {
		lines = append(lines, l)
		return nil
	})
	return lines, err
}

package incidents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// Settings is one block of an incident's world (topology, model, kernel):
// each key names a field of record.Model by its plan.json name — the same
// names fiomig run's flags and plan.json's params.model use —, each value
// is either plain (its source is the block's) or a setting {value, source,
// note} with a source of its own. Source and Note tag the block.
type Settings struct {
	Source Source
	Note   string
	// keys in file order; values their JSON; tags the per-key source of
	// a setting written as {value, source, note}.
	keys   []string
	values map[string]json.RawMessage
	tags   map[string]Tag
}

// setting is a value written with its own source.
type setting struct {
	Value  json.RawMessage `json:"value"`
	Source Source          `json:"source"`
	Note   string          `json:"note,omitempty"`
}

// UnmarshalJSON reads a block: "source" and "note" are the block's, every
// other key a value or a setting.
func (s *Settings) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want a mapping of settings, got %v", tok)
	}
	*s = Settings{values: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		switch key {
		case "source":
			err = json.Unmarshal(raw, &s.Source)
		case "note":
			err = json.Unmarshal(raw, &s.Note)
		default:
			if _, dup := s.values[key]; dup {
				return fmt.Errorf("%s: set twice", key)
			}
			s.keys = append(s.keys, key)
			if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
				var st setting
				sd := json.NewDecoder(bytes.NewReader(raw))
				sd.DisallowUnknownFields()
				if err := sd.Decode(&st); err != nil {
					return fmt.Errorf("%s: %w", key, err)
				}
				if s.tags == nil {
					s.tags = map[string]Tag{}
				}
				s.tags[key] = Tag{Source: st.Source, Note: st.Note}
				raw = st.Value
			}
			s.values[key] = raw
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// SourceOf is the source of the setting key: its own, else the block's.
func (s Settings) SourceOf(key string) Source {
	if t, ok := s.tags[key]; ok {
		return t.Source
	}
	return s.Source
}

// Has says whether the block sets key.
func (s Settings) Has(key string) bool {
	_, ok := s.values[key]
	return ok
}

// modelFields maps record.Model's plan.json names to their field index.
var modelFields = func() map[string]int {
	out := map[string]int{}
	t := reflect.TypeFor[record.Model]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && name != "version" {
			out[name] = i
		}
	}
	return out
}()

// fieldError is a bad value of one setting: its field from the file's top
// (block.key.value, or block.key for a plain value; list items indexed,
// hypotheses[1].alternatives[0].set.key) and what is wrong.
type fieldError struct {
	field  string
	goType string // the wanted type, for finding the value's line
	msg    string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// into sets every value of s into m, each decoded into its field's type;
// block names s in errors (its field from the file's top). A key that is
// no model field, or a value of the wrong type, is an error naming it.
func (s Settings) into(block string, m *record.Model, set map[string]string) error {
	v := reflect.ValueOf(m).Elem()
	// errAt is a fieldError at key (and at its "value" when deep).
	errAt := func(key string, deep bool, goType, msg string) error {
		e := &fieldError{field: block + "." + key, goType: goType, msg: msg}
		if _, tagged := s.tags[key]; tagged && deep {
			e.field += ".value"
		}
		return e
	}
	for _, key := range s.keys {
		i, ok := modelFields[key]
		if !ok {
			known := slices.Sorted(func(yield func(string) bool) {
				for k := range modelFields {
					if !yield(k) {
						return
					}
				}
			})
			return errAt(key, false, "", fmt.Sprintf("not a model setting (known: %s)", strings.Join(known, ", ")))
		}
		if other, dup := set[key]; dup {
			return errAt(key, false, "", "set in "+other+" too")
		}
		set[key] = block
		f := v.Field(i)
		p := reflect.New(f.Type())
		if err := json.Unmarshal(s.values[key], p.Interface()); err != nil {
			got := "another type"
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				got = te.Value
			}
			return errAt(key, true, f.Type().String(), fmt.Sprintf("want %s, got %s", f.Type(), got))
		}
		f.Set(p.Elem())
	}
	return nil
}

// CSIRestoreOperator is the csi_restore value meaning "the CSI driver of
// each operator's release": the prefix operator's matches by IP only
// (record.CSIRestoreByIP), the fixed one's by ip:port
// (record.CSIRestoreByEndpoint).
const CSIRestoreOperator = "operator"

// World is the world an incident's run simulates with operator (prefix or
// fixed): its topology, model and kernel blocks read into one
// record.Model by their plan.json names, the pacing's Job start and data
// sync ranges, the operator, and csi_restore "operator" resolved for it.
// Values left out take the simulator's defaults. A combination of
// hypotheses (Combinations) sets its alternatives' switches over the
// blocks. Every value is checked (record.Model.Validate); errors name the
// block and the key.
func (inc Incident) World(operator string) (record.Model, error) {
	var m record.Model
	set := map[string]string{}
	for _, b := range []struct {
		name string
		s    Settings
	}{{"topology", inc.Topology}, {"model", inc.Model}, {"kernel", inc.Kernel}} {
		if err := b.s.into(b.name, &m, set); err != nil {
			return m, err
		}
	}
	for _, o := range inc.overlays {
		if err := o.s.into(o.block, &m, map[string]string{}); err != nil {
			return m, err
		}
	}
	if r := inc.Pacing.JobStartS; len(r) == 2 {
		m.JobStartMinS, m.JobStartMaxS = r[0], r[1]
	}
	if r := inc.Pacing.SyncS; len(r) == 2 {
		m.SyncMinS, m.SyncMaxS = r[0], r[1]
	}
	if set["operator"] != "" {
		return m, &fieldError{field: set["operator"] + ".operator", msg: "the operator is operators.value's (prefix, fixed or both)"}
	}
	m.Operator = operator
	if m.CSIRestore == CSIRestoreOperator {
		m.CSIRestore = record.CSIRestoreByIP
		if operator == record.OperatorFixed {
			m.CSIRestore = record.CSIRestoreByEndpoint
		}
	}
	return m, m.Validate()
}

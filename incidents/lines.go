package incidents

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// withLines puts each error of err (one, or several joined) after "line
// N: ", N the line in the YAML document b of the field the error names
// first ("symptoms.observed[2].value: ..."), when it can be found; a bad
// setting's error (fieldError) comes first.
func withLines(err error, b []byte) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var doc yamlv3.Node
	if yamlv3.Unmarshal(b, &doc) != nil {
		return err
	}
	var first, rest []error
	for _, e := range errs {
		var fe *fieldError
		isField := errors.As(e, &fe)
		field, goType := leadingField(e.Error()), ""
		if isField {
			field, goType = fe.field, fe.goType
		}
		if n := lineOf(&doc, field, goType); n > 0 {
			e = fmt.Errorf("line %d: %w", n, e)
		}
		if isField {
			first = append(first, e)
		} else {
			rest = append(rest, e)
		}
	}
	return errors.Join(append(first, rest...)...)
}

// fieldPath matches an error's leading field: keys with optional list
// indexes, dots between ("expected[3].margin.value").
var fieldPath = regexp.MustCompile(`^([a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*):`)

func leadingField(msg string) string {
	if m := fieldPath.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// Line is the 1-based line of field (keys from the file's top, dots
// between, "[i]" picking a list's item: "faults.scheduled[1]") in the
// incident file's text, or 0 when the text has none.
func (inc Incident) Line(field string) int {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(inc.Text, &doc) != nil {
		return 0
	}
	return lineOf(&doc, field, "")
}

// lineOf is the 1-based line in doc (a parsed YAML document) of the key
// field names — keys from the top, dots between, "[i]" picking a list's
// item; a key under a list without an index is looked for in every item,
// preferring the first whose value does not parse as goType (the Go type a
// decoder wanted, "" for any) — or 0 when there is none.
func lineOf(doc *yamlv3.Node, field, goType string) int {
	if field == "" || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
		return 0
	}
	// A candidate is a key node and its value.
	type kv struct{ key, val *yamlv3.Node }
	cur := []kv{{doc.Content[0], doc.Content[0]}}
	for _, part := range strings.Split(field, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i > 0 && strings.HasSuffix(part, "]") {
			n, err := strconv.Atoi(part[i+1 : len(part)-1])
			if err != nil {
				return 0
			}
			key, idx = part[:i], n
		}
		var next []kv
		for _, c := range cur {
			for _, m := range mappings(c.val) {
				for i := 0; i+1 < len(m.Content); i += 2 {
					if m.Content[i].Value != key {
						continue
					}
					k, v := m.Content[i], m.Content[i+1]
					switch {
					case idx < 0:
						next = append(next, kv{k, v})
					case v.Kind == yamlv3.SequenceNode && idx < len(v.Content):
						next = append(next, kv{v.Content[idx], v.Content[idx]})
					}
				}
			}
		}
		if len(next) == 0 {
			return 0
		}
		cur = next
	}
	if i := slices.IndexFunc(cur, func(c kv) bool { return c.val.Kind == yamlv3.ScalarNode && !fitsType(c.val, goType) }); i >= 0 {
		return cur[i].key.Line
	}
	return cur[0].key.Line
}

// mappings are the mappings a key is looked up in under n: n itself, or
// each item of a list n.
func mappings(n *yamlv3.Node) []*yamlv3.Node {
	switch n.Kind {
	case yamlv3.MappingNode:
		return []*yamlv3.Node{n}
	case yamlv3.SequenceNode:
		var out []*yamlv3.Node
		for _, c := range n.Content {
			if c.Kind == yamlv3.MappingNode {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// fitsType says whether the YAML scalar n decodes into the Go type named
// goType (int*, uint*, float*, bool, string); types it does not know fit.
func fitsType(n *yamlv3.Node, goType string) bool {
	var err error
	switch {
	case goType == "string":
		return n.Tag == "!!str"
	case strings.HasPrefix(goType, "int"):
		_, err = strconv.ParseInt(n.Value, 10, 64)
	case strings.HasPrefix(goType, "uint"):
		_, err = strconv.ParseUint(n.Value, 10, 64)
	case strings.HasPrefix(goType, "float"):
		_, err = strconv.ParseFloat(n.Value, 64)
	case goType == "bool":
		return n.Tag == "!!bool"
	}
	return err == nil
}

// Package jsonl is how the test programs of this module report: one JSON object per
// line on stdout, its "kind" naming what it says, read by the pytest files.
package jsonl

import (
	"encoding/json"
	"os"
)

var out = json.NewEncoder(os.Stdout)

// Emit prints fields with "kind" set to kind.
func Emit(kind string, fields map[string]any) {
	fields["kind"] = kind
	if err := out.Encode(fields); err != nil {
		panic(err)
	}
}

// Fail reports what failed and exits 1.
func Fail(what string, err error) {
	Emit("error", map[string]any{"what": what, "error": err.Error()})
	os.Exit(1)
}

// Err is err's text, or nil (JSON null) when there is none.
func Err(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// Listing commands print a table, or with -o json one JSON document whose
// field names are the table's columns in snake_case. Replica lists are JSON
// arrays of broker ids and topic ids are UUIDs, as the logs show them.

// checkOutput validates an --output value.
func checkOutput(output string) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("--output %q: want table or json", output)
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

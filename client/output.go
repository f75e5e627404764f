package client

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Listings print as a table, or as one JSON document whose field names are
// the table's columns in snake_case. Replica lists are JSON arrays of broker
// ids and topic ids are UUIDs, as the logs show them.

// CheckOutput validates an output format: table or json.
func CheckOutput(output string) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("--output %q: want table or json", output)
	}
	return nil
}

// WriteJSON prints v as indented JSON.
func WriteJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// formatBrokers is the one way tables show a list of broker ids: [1 2 3].
func formatBrokers(ids []int32) string { return fmt.Sprint(nonNil(ids)) }

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatAssignment is "topic[0 1] other[2]", or "-" for none.
func formatAssignment(a map[string][]int32) string {
	var parts []string
	for t, ps := range a {
		parts = append(parts, t+formatBrokers(ps))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

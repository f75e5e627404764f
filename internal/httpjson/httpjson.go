// Package httpjson writes JSON HTTP responses, the one way the admin API
// and the membership peer endpoints answer.
package httpjson

import (
	"encoding/json"
	"net/http"
)

// Write sends v as an indented JSON document with status 200, or a 500 if
// v does not encode (nothing is written before it has encoded whole).
func Write(w http.ResponseWriter, v any) {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(raw, '\n'))
}

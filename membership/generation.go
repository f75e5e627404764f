package membership

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spool-log/spool/internal/atomicfile"
)

const generationFile = "generation"

// bumpGeneration reads the boot counter kept in dataDir, increments it and
// persists the new value before returning it, so that two boots of the same
// data directory never advertise the same "gen" tag. Peers use it to tell a
// restarted broker from a stale view of its previous life.
func bumpGeneration(dataDir string) (uint64, error) {
	path := filepath.Join(dataDir, generationFile)
	var gen uint64
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("read boot generation %s: %w", path, err)
	default:
		gen, err = strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse boot generation %s: %w", path, err)
		}
	}
	gen++
	if err := atomicfile.Write(path, []byte(strconv.FormatUint(gen, 10)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("persist boot generation: %w", err)
	}
	return gen, nil
}

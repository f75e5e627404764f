package main

import (
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/node"
)

// addScrubFlags adds the flags of the background CRC scrubber (node/scrub).
func addScrubFlags(fs *pflag.FlagSet, cfg *node.Config) {
	fs.Int64Var(&cfg.ScrubRate, "scrub-rate", cfg.ScrubRate, "bytes per second the background scrub reads to check the CRCs of sealed segments; 0 turns it off (SPOOL_SCRUB_RATE)")
	fs.DurationVar(&cfg.ScrubInterval, "scrub-interval", cfg.ScrubInterval, "time between the starts of two scrub passes over every local partition; the first starts within 5 minutes of start-up (SPOOL_SCRUB_INTERVAL)")
}

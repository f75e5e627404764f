package main

import (
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/node"
)

// addQuotaFlags adds how client quotas are measured (node/quota): Kafka's
// quota.window.num and quota.window.size.seconds.
func addQuotaFlags(fs *pflag.FlagSet, cfg *node.Config) {
	fs.IntVar(&cfg.Quota.Samples, "quota-window-num", cfg.Quota.Samples, "samples a client quota's rate is measured over, Kafka's quota.window.num (SPOOL_QUOTA_WINDOW_NUM)")
	fs.DurationVar(&cfg.Quota.SampleWindow, "quota-window-size", cfg.Quota.SampleWindow, "the length of one sample, Kafka's quota.window.size.seconds; also the longest throttle of a byte-rate or request quota (SPOOL_QUOTA_WINDOW_SIZE)")
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newConsumeCmd(g *globals) *cobra.Command {
	var (
		from      string
		count     int
		follow    bool
		printKeys bool
		keySep    string
		partition int32
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic, one value per line",
		Long: `Print records of a topic, one value per line (key, separator, value with
--print-keys). --from is beginning, end, an offset (in every partition), or
time:RFC3339 (the first record at or after that time). Without --follow it stops
at the end offsets seen when it started; -n stops after N records.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			ctx := cmd.Context()
			adm, closeAdm, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer closeAdm()
			starts, ends, err := consumeRange(ctx, adm, topic, from, partition)
			if err != nil {
				return err
			}

			offsets := make(map[int32]kgo.Offset, len(starts))
			pending := make(map[int32]int64) // partition -> end offset still to reach
			for p, s := range starts {
				offsets[p] = kgo.NewOffset().At(s)
				if e := ends[p]; s < e {
					pending[p] = e
				}
			}
			if !follow && len(pending) == 0 {
				return nil
			}
			cl, err := g.client(ctx, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
			if err != nil {
				return err
			}
			defer cl.Close()

			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			printed := 0
			for {
				fetches := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return nil
				}
				var ferr error
				fetches.EachError(func(t string, p int32, err error) {
					if !errors.Is(err, context.Canceled) && ferr == nil {
						ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
					}
				})
				if ferr != nil {
					return ferr
				}
				stop := false
				fetches.EachRecord(func(r *kgo.Record) {
					if stop {
						return
					}
					if printKeys {
						out.Write(r.Key)
						out.WriteString(keySep)
					}
					out.Write(r.Value)
					out.WriteByte('\n')
					printed++
					if e, ok := pending[r.Partition]; ok && r.Offset+1 >= e {
						delete(pending, r.Partition)
					}
					if count > 0 && printed >= count {
						stop = true
					}
				})
				if err := out.Flush(); err != nil {
					return err
				}
				if stop || !follow && len(pending) == 0 {
					return nil
				}
			}
		},
	}
	cmd.Flags().StringVar(&from, "from", "beginning", "where to start: beginning, end, OFFSET, or time:RFC3339")
	cmd.Flags().IntVarP(&count, "count", "n", 0, "stop after this many records (0: no limit)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep waiting for new records instead of stopping at the end")
	cmd.Flags().BoolVar(&printKeys, "print-keys", false, "print each record's key and --key-separator before its value")
	cmd.Flags().StringVar(&keySep, "key-separator", "\t", "what --print-keys puts between key and value")
	cmd.Flags().Int32Var(&partition, "partition", -1, "read only this partition (-1: all)")
	return cmd
}

// consumeRange resolves --from into a start offset per partition, and returns
// the end offsets at this moment, where a non-following consume stops.
func consumeRange(ctx context.Context, adm *kadm.Client, topic, from string, only int32) (starts, ends map[int32]int64, err error) {
	endOffs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	startOffs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("list start offsets of %s: %w", topic, err)
	}
	if err := endOffs.Error(); err != nil {
		return nil, nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	ends = make(map[int32]int64)
	starts = make(map[int32]int64)
	endOffs.Each(func(o kadm.ListedOffset) {
		if only < 0 || o.Partition == only {
			ends[o.Partition] = o.Offset
		}
	})
	if len(ends) == 0 {
		return nil, nil, fmt.Errorf("topic %s has no partition %d", topic, only)
	}

	var byTime kadm.ListedOffsets
	switch {
	case from == "beginning":
	case from == "end":
	case strings.HasPrefix(from, "time:"):
		t, err := time.Parse(time.RFC3339, strings.TrimPrefix(from, "time:"))
		if err != nil {
			return nil, nil, fmt.Errorf("--from %q: %w", from, err)
		}
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topic); err != nil {
			return nil, nil, fmt.Errorf("list offsets of %s after %v: %w", topic, t, err)
		}
	default:
		if _, err := strconv.ParseInt(from, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("--from %q: want beginning, end, an offset, or time:RFC3339", from)
		}
	}
	for p, end := range ends {
		s, _ := startOffs.Lookup(topic, p)
		switch {
		case from == "beginning":
			starts[p] = s.Offset
		case from == "end":
			starts[p] = end
		case byTime != nil:
			o, ok := byTime.Lookup(topic, p)
			if !ok || o.Err != nil || o.Offset < 0 || o.Offset > end {
				starts[p] = end // nothing at or after that time
			} else {
				starts[p] = o.Offset
			}
		default:
			off, _ := strconv.ParseInt(from, 10, 64)
			starts[p] = min(max(off, s.Offset), end)
		}
	}
	return starts, ends, nil
}

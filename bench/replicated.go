package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runReplicated measures name: conns connections appending batches of
// batchRecords records through a leader process replicating to two
// follower processes (see replicated_server.go). The CPU figure is the
// three processes' together, as a three-node cluster's is.
func (l *BaselineConfig) runReplicated(ctx context.Context, name string, conns, batchRecords int, dir string) (Result, error) {
	files, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(files)
	common := []string{"--roll-bytes", strconv.FormatInt(l.RollBytes, 10)}
	if l.Fsync {
		common = append(common, "--fsync")
	}
	var followers []*baselineProcess
	defer func() {
		for _, f := range followers {
			f.stop()
		}
	}()
	var addrs []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(files, "follower"+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return Result{}, err
		}
		f, err := l.startServer("follower", append([]string{"--dir", d}, common...)...)
		if err != nil {
			return Result{}, err
		}
		followers = append(followers, f)
		addrs = append(addrs, f.addr)
	}
	value := randomPayload(l.RecordSize)
	batch := rawRecordBatch(batchRecords, value, time.Now().UnixMilli())
	d := filepath.Join(files, "leader")
	if err := os.Mkdir(d, 0o755); err != nil {
		return Result{}, err
	}
	args := append([]string{"--dir", d, "--batch-bytes", strconv.Itoa(len(batch)), "--followers", strings.Join(addrs, ",")}, common...)
	leader, err := l.startServer("replicated", args...)
	if err != nil {
		return Result{}, err
	}
	var followersBefore time.Duration
	for _, f := range followers {
		c, err := f.cpu()
		if err != nil {
			return Result{}, errors.Join(err, leader.stop())
		}
		followersBefore += c
	}
	res, leaderCPU, err := l.drive(ctx, leader, newMeter(name), conns, batch, int64(batchRecords), int64(batchRecords*len(value)))
	var followersCPU time.Duration
	for _, f := range followers {
		c, cerr := f.cpu()
		if err == nil {
			err = cerr
		}
		followersCPU += c
	}
	followersCPU -= followersBefore
	// The followers' own errors say why the leader's answers stopped.
	for _, f := range followers {
		if serr := f.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	followers = nil
	res.Extra = map[string]float64{"bytes_per_batch": float64(len(batch)), "records_per_batch": float64(batchRecords)}
	if gb := float64(res.Bytes) / 1e9; gb > 0 {
		res.Extra["server_cpu_seconds_per_gb"] = (leaderCPU + followersCPU).Seconds() / gb
		res.Extra["leader_cpu_seconds_per_gb"] = leaderCPU.Seconds() / gb
	}
	if res.Latency != nil && conns == 1 && batchRecords == 1 {
		res.Latency.What = "replicated round trip"
	}
	return res, err
}

package integration

// The new admin APIs against kmsg byte for byte: every version the node
// advertises of each is sent on a raw connection, and the response body is
// decoded with kmsg and encoded again, which must give back exactly the
// bytes the node sent (a field kmsg would write differently, a trailing
// byte, a wrong flexible encoding all fail).

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminAPIRanges are the new APIs at Kafka 4.1's version ranges
// (DescribeLogDirs v0 was removed in Kafka 4.0; its v5 is Kafka 4.2's).
var adminAPIRanges = map[int16][2]int16{
	int16(kmsg.DeleteRecords):           {0, 2},
	int16(kmsg.AlterConfigs):            {0, 2},
	int16(kmsg.DescribeLogDirs):         {1, 4},
	int16(kmsg.CreatePartitions):        {0, 3},
	int16(kmsg.IncrementalAlterConfigs): {0, 1},
	int16(kmsg.OffsetDelete):            {0, 0},
	int16(kmsg.DescribeCluster):         {0, 2},
	int16(kmsg.DescribeProducers):       {0, 0},
	int16(kmsg.DescribeTopicPartitions): {0, 0},
	int16(kmsg.DescribeConfigs):         {1, 4},
}

// exactRoundTrip sends req at its version on c and checks that kmsg
// re-encodes the response body to the same bytes. It returns the response.
func exactRoundTrip(t *testing.T, c interface {
	Write([]byte) (int, error)
}, raw func(int32) []byte, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("spool-roundtrip")).AppendRequest(nil, req, corr)
	if _, err := c.Write(frame); err != nil {
		t.Fatalf("write %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body := raw(corr)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s v%d: response header has tags", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d: kmsg cannot decode the response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if again := resp.AppendTo(nil); !bytes.Equal(again, body) {
		t.Fatalf("%s v%d: the node sent %d bytes, kmsg encodes the decoded response as %d bytes\nnode: %x\nkmsg: %x",
			kmsg.NameForKey(req.Key()), req.GetVersion(), len(body), len(again), body, again)
	}
	return resp
}

func TestAdminAPIsKmsgRoundTrip(t *testing.T) {
	n := StartNode(t)
	const topic = "roundtrip"
	franzCreateTopic(t, n.KafkaAddr, topic, 3)
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range 6 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: topic, Partition: 1, At: 2, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "roundtrip-group", commit); err != nil {
		t.Fatal(err)
	}

	c := dialRaw(t, n.KafkaAddr)
	defer c.Close()
	raw := func(corr int32) []byte { return readRawResponse(t, c, corr) }
	corr := int32(1)

	// What the node advertises is what this test covers.
	av := roundTripRaw(t, c, kmsg.NewPtrApiVersionsRequest(), corr).(*kmsg.ApiVersionsResponse)
	corr++
	got := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		if _, ok := adminAPIRanges[k.ApiKey]; ok {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
	}
	for key, want := range adminAPIRanges {
		if got[key] != want {
			t.Errorf("%s advertised as %v, want Kafka 4.1's %v", kmsg.NameForKey(key), got[key], want)
		}
	}

	build := map[int16]func() kmsg.Request{
		int16(kmsg.CreatePartitions): func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.ValidateOnly = true
			for _, count := range []int32{6, 1} { // one that would work, one refused with a message
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = topic, count
				r.Topics = append(r.Topics, rt)
			}
			r.Topics[1].Topic = "no-such-topic"
			return r
		},
		int16(kmsg.DeleteRecords): func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			for _, p := range []int32{0, 99} {
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Partition, rp.Offset = p, 1
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
			return r
		},
		int16(kmsg.AlterConfigs): func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			for _, res := range []struct {
				typ        kmsg.ConfigResourceType
				name, k, v string
			}{{kmsg.ConfigResourceTypeTopic, topic, "retention.ms", "1000"}, {kmsg.ConfigResourceTypeTopic, topic, "bogus", "1"}, {kmsg.ConfigResourceTypeBroker, "1", "num.partitions", "2"}} {
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = res.typ, res.name
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = res.k, kmsg.StringPtr(res.v)
				rr.Configs = append(rr.Configs, c)
				r.Resources = append(r.Resources, rr)
			}
			return r
		},
		int16(kmsg.IncrementalAlterConfigs): func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		},
		int16(kmsg.DescribeConfigs): func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.IncludeSynonyms, r.IncludeDocumentation = true, true
			for _, res := range []struct {
				typ  kmsg.ConfigResourceType
				name string
			}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeTopic, topic}} {
				rr := kmsg.NewDescribeConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = res.typ, res.name
				r.Resources = append(r.Resources, rr)
			}
			return r
		},
		int16(kmsg.DescribeCluster): func() kmsg.Request {
			r := kmsg.NewPtrDescribeClusterRequest()
			r.IncludeClusterAuthorizedOperations = true
			r.IncludeFencedBrokers = true
			return r
		},
		int16(kmsg.DescribeTopicPartitions): func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.ResponsePartitionLimit = 2
			return r
		},
		int16(kmsg.DescribeLogDirs): func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() },
		int16(kmsg.OffsetDelete): func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "roundtrip-group"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = 2 // nothing committed there: the commit on 1 stays
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		},
		int16(kmsg.DescribeProducers): func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0, 1, 2}
			r.Topics = append(r.Topics, rt)
			return r
		},
	}
	for key, vs := range adminAPIRanges {
		for v := vs[0]; v <= vs[1]; v++ {
			req := build[key]()
			req.SetVersion(v)
			resp := exactRoundTrip(t, c, raw, req, corr)
			corr++
			if err := adminResponseSane(resp); err != nil {
				t.Errorf("%s v%d: %v", kmsg.NameForKey(key), v, err)
			}
		}
	}
}

// adminResponseSane checks that a round-tripped response carries what the
// request asked for, so the byte comparison is not over an empty answer.
func adminResponseSane(resp kmsg.Response) error {
	switch r := resp.(type) {
	case *kmsg.CreatePartitionsResponse:
		if len(r.Topics) != 2 || r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode == 0 {
			return fmt.Errorf("topics %+v", r.Topics)
		}
	case *kmsg.DeleteRecordsResponse:
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 || r.Topics[0].Partitions[0].LowWatermark != 1 || r.Topics[0].Partitions[1].ErrorCode == 0 {
			return fmt.Errorf("topics %+v", r.Topics)
		}
	case *kmsg.AlterConfigsResponse:
		if len(r.Resources) != 3 || r.Resources[0].ErrorCode != 0 || r.Resources[1].ErrorCode == 0 || r.Resources[2].ErrorCode == 0 {
			return fmt.Errorf("resources %+v", r.Resources)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		if len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
			return fmt.Errorf("resources %+v", r.Resources)
		}
	case *kmsg.DescribeConfigsResponse:
		if len(r.Resources) != 2 || len(r.Resources[0].Configs) < 10 || len(r.Resources[1].Configs) < 9 {
			return fmt.Errorf("resources %+v", r.Resources)
		}
	case *kmsg.DescribeClusterResponse:
		if len(r.Brokers) != 1 || r.ClusterID == "" {
			return fmt.Errorf("%+v", r)
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		if len(r.Topics) == 0 || r.NextCursor == nil {
			return fmt.Errorf("topics %+v, cursor %v", r.Topics, r.NextCursor)
		}
	case *kmsg.DescribeLogDirsResponse:
		if len(r.Dirs) != 1 || len(r.Dirs[0].Topics) == 0 {
			return fmt.Errorf("dirs %+v", r.Dirs)
		}
	case *kmsg.OffsetDeleteResponse:
		if r.ErrorCode != 0 || len(r.Topics) != 1 {
			return fmt.Errorf("%+v", r)
		}
	case *kmsg.DescribeProducersResponse:
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 3 || len(r.Topics[0].Partitions[0].ActiveProducers) != 1 {
			return fmt.Errorf("topics %+v", r.Topics)
		}
	}
	return nil
}

// Command franz drives Sluice with franz-go (kgo and kadm) at its defaults: an
// idempotent producer that batches, every codec, a two-member consumer group that
// commits, a third member that resumes from the commits, and kadm's admin calls. It
// prints one JSON object per line; test_go_clients.py compares them with what it set up
// and with what librdkafka reads.
package main

import (
	"context"
	"flag"
	"fmt"
	"sluice/tests/integration/go/internal/jsonl"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func toRec(r *kgo.Record) jsonl.Rec {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return jsonl.Rec{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), Headers: h}
}

// -next-gen: the group members opt into KIP-848 consumer groups (kgo.ServerSideBalancer;
// franz-go v1.22 keeps the classic protocol unless asked, even when the broker offers it).
var nextGen = flag.Bool("next-gen", false, "group members use the KIP-848 consumer group protocol")

// groupOpts: the options every group member of the program gets.
func groupOpts(a jsonl.Args, extra ...kgo.Opt) []kgo.Opt {
	opts := append([]kgo.Opt{kgo.SeedBrokers(a.Brokers...), kgo.ConsumerGroup(a.Group), kgo.ConsumeTopics(a.Topic)}, extra...)
	if *nextGen {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	return opts
}

func main() {
	a, ctx, cancel := jsonl.Start(200)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(a.Brokers...))
	if err != nil {
		jsonl.Fail("client", err)
	}
	adm := kadm.NewClient(admin)
	created, err := adm.CreateTopics(ctx, int32(a.Partitions), 1, map[string]*string{"retention.ms": strp("3600000")}, a.Topic)
	if err != nil {
		jsonl.Fail("create", err)
	}
	for _, c := range created.Sorted() {
		jsonl.Emit("created", map[string]any{"topic": c.Topic, "err": jsonl.Err(c.Err)})
	}
	again, _ := adm.CreateTopics(ctx, 1, 1, nil, a.Topic)
	for _, c := range again.Sorted() {
		jsonl.Emit("created-again", map[string]any{"topic": c.Topic, "err": jsonl.Err(c.Err)})
	}

	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	total := 0
	for _, c := range codecs {
		// Defaults otherwise: idempotent, acks=all, linger and batching as shipped.
		p, err := kgo.NewClient(kgo.SeedBrokers(a.Brokers...), kgo.ProducerBatchCompression(c.codec),
			kgo.DefaultProduceTopic(a.Topic))
		if err != nil {
			jsonl.Fail("producer", err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		acked := map[string][2]int64{}
		for i := 0; i < a.PerCodec; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("%s-k%d", c.name, i%17)),
				Value:   []byte(fmt.Sprintf("%s-v%d", c.name, i)),
				Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(c.name)}, {Key: "i", Value: []byte(fmt.Sprint(i))}}}
			wg.Add(1)
			p.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err.Error())
					return
				}
				acked[string(r.Value)] = [2]int64{int64(r.Partition), r.Offset}
			})
		}
		wg.Wait()
		p.Close()
		total += len(acked)
		jsonl.Emit("produced", map[string]any{"codec": c.name, "acked": acked, "errors": errs})
	}

	// Two members of a group consume everything; each commits what it read on close.
	var mu sync.Mutex
	seen := map[string][]jsonl.Rec{}
	// Each member's partitions, from the client's callbacks. The members fetch nothing
	// until the group has split the partitions between them: otherwise the first to get
	// an assignment may read everything before it gives half away (its next heartbeat).
	owned := make([]map[int32]bool, 2)
	track := func(m int, add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ps[a.Topic] {
				if add {
					owned[m][p] = true
				} else {
					delete(owned[m], p)
				}
			}
		}
	}
	members := make([]*kgo.Client, 2)
	for m := range members {
		owned[m] = map[int32]bool{}
		cl, err := kgo.NewClient(groupOpts(a, kgo.ClientID(fmt.Sprintf("franz-member-%d", m)), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(track(m, true)), kgo.OnPartitionsRevoked(track(m, false)),
			kgo.OnPartitionsLost(track(m, false)))...)
		if err != nil {
			jsonl.Fail("member", err)
		}
		cl.PauseFetchTopics(a.Topic)
		members[m] = cl
	}
	split := func() int {
		mu.Lock()
		defer mu.Unlock()
		if len(owned[0]) == 0 || len(owned[1]) == 0 || len(owned[0])+len(owned[1]) != a.Partitions {
			return 0
		}
		for p := range owned[0] {
			if owned[1][p] {
				return 0
			}
		}
		return 1
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for m, cl := range members {
		wg.Add(1)
		go func(name string, cl *kgo.Client) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[name] = append(seen[name], toRec(r))
					mu.Unlock()
				})
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					mu.Lock()
					seen[name+"-commit-error"] = append(seen[name+"-commit-error"], jsonl.Rec{Value: err.Error()})
					mu.Unlock()
				}
			}
		}(fmt.Sprint(m), cl)
	}
	var none sync.Mutex
	jsonl.WaitFor(&none, split, 1, 60*time.Second)
	for _, cl := range members {
		cl.ResumeFetchTopics(a.Topic)
	}
	jsonl.WaitFor(&mu, func() int { return len(seen["0"]) + len(seen["1"]) }, total, 90*time.Second)
	if *nextGen {
		// ConsumerGroupDescribe while both members are in: a consumer group, each member
		// a consumer-protocol one (type 1) with its partitions.
		described, err := adm.DescribeConsumerGroups(ctx, a.Group)
		if err != nil {
			jsonl.Fail("describe consumer groups", err)
		}
		for _, g := range described {
			var ms []map[string]any
			for _, m := range g.Members {
				var parts []int32
				for _, ps := range m.Assignment {
					for p := range ps {
						parts = append(parts, p)
					}
				}
				sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
				ms = append(ms, map[string]any{"epoch": m.MemberEpoch, "type": m.MemberType, "partitions": parts})
			}
			jsonl.Emit("consumer-group", map[string]any{"group": g.Group, "state": g.State, "epoch": g.Epoch,
				"assignor": g.AssignorName, "members": ms, "err": jsonl.Err(g.Err)})
		}
	}
	// Both members hold part of the group once all is read (it was read by two).
	close(stop)
	wg.Wait()
	for m, cl := range members {
		mu.Lock()
		jsonl.Emit("consumed", map[string]any{"member": m, "records": seen[fmt.Sprint(m)],
			"commit_errors": len(seen[fmt.Sprint(m)+"-commit-error"])})
		mu.Unlock()
		cl.Close()
	}

	offs, err := adm.FetchOffsets(ctx, a.Group)
	if err != nil {
		jsonl.Fail("fetch offsets", err)
	}
	committed := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) { committed[o.Partition] = o.At })
	jsonl.Emit("committed", map[string]any{"offsets": committed})

	// A third member resumes at the commits: it reads only what comes after them.
	p, _ := kgo.NewClient(kgo.SeedBrokers(a.Brokers...), kgo.DefaultProduceTopic(a.Topic))
	for i := 0; i < 5; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte("late"), Value: []byte(fmt.Sprintf("late-%d", i))}).FirstErr(); err != nil {
			jsonl.Fail("late produce", err)
		}
	}
	p.Close()
	third, _ := kgo.NewClient(groupOpts(a)...)
	var late []jsonl.Rec
	for len(late) < 5 && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		third.PollFetches(pctx).EachRecord(func(r *kgo.Record) { late = append(late, toRec(r)) })
		pcancel()
	}
	third.Close()
	jsonl.Emit("resumed", map[string]any{"records": late})

	groups, err := adm.DescribeGroups(ctx, a.Group)
	if err != nil {
		jsonl.Fail("describe groups", err)
	}
	for _, g := range groups.Sorted() {
		jsonl.Emit("group", map[string]any{"group": g.Group, "state": g.State, "protocol_type": g.ProtocolType,
			"members": len(g.Members), "err": jsonl.Err(g.Err)})
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		jsonl.Fail("list groups", err)
	}
	jsonl.Emit("groups", map[string]any{"names": listed.Groups()})
	ends, err := adm.ListEndOffsets(ctx, a.Topic)
	if err != nil {
		jsonl.Fail("end offsets", err)
	}
	endMap := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { endMap[o.Partition] = o.Offset })
	jsonl.Emit("ends", map[string]any{"offsets": endMap})
	cfgs, err := adm.DescribeTopicConfigs(ctx, a.Topic)
	if err != nil {
		jsonl.Fail("describe configs", err)
	}
	for _, rc := range cfgs {
		vals := map[string]string{}
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" || c.Key == "cleanup.policy" {
				vals[c.Key] = c.MaybeValue()
			}
		}
		jsonl.Emit("configs", map[string]any{"topic": rc.Name, "values": vals, "err": jsonl.Err(rc.Err)})
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		jsonl.Fail("list topics", err)
	}
	names := topics.Names()
	sort.Strings(names)
	jsonl.Emit("topics", map[string]any{"names": names})
	admin.Close()
}

func strp(s string) *string { return &s }

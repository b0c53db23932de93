// Command kafkago drives Sluice with segmentio/kafka-go: topics created through its
// Client, a Writer per codec (keys, headers, acks=all), two Readers in a consumer group
// that commit, a third that resumes from the commits, and the Client's admin reads. It
// prints one JSON object per line for test_go_clients.py.
package main

import (
	"context"
	"errors"
	"fmt"
	"sluice/tests/integration/go/internal/jsonl"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

func toRec(m kafka.Message) jsonl.Rec {
	h := map[string]string{}
	for _, x := range m.Headers {
		h[x.Key] = string(x.Value)
	}
	return jsonl.Rec{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value), Headers: h}
}

func main() {
	a, ctx, cancel := jsonl.Start(100)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(a.Brokers...), Timeout: 30 * time.Second}

	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: a.Topic, NumPartitions: a.Partitions, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}}}})
	if err != nil {
		jsonl.Fail("create", err)
	}
	jsonl.Emit("created", map[string]any{"err": jsonl.Err(created.Errors[a.Topic])})
	again, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: a.Topic, NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil {
		jsonl.Fail("create again", err)
	}
	jsonl.Emit("created-again", map[string]any{"err": jsonl.Err(again.Errors[a.Topic]),
		"exists": errors.Is(again.Errors[a.Topic], kafka.TopicAlreadyExists)})

	codecs := []struct {
		name  string
		codec compress.Compression
	}{{"none", 0}, {"gzip", compress.Gzip}, {"snappy", compress.Snappy}, {"lz4", compress.Lz4}, {"zstd", compress.Zstd}}
	total := 0
	for _, c := range codecs {
		w := &kafka.Writer{Addr: kafka.TCP(a.Brokers...), Topic: a.Topic, Balancer: &kafka.Hash{},
			RequiredAcks: kafka.RequireAll, Compression: c.codec, BatchTimeout: 10 * time.Millisecond}
		msgs := make([]kafka.Message, a.PerCodec)
		for i := range msgs {
			msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("%s-k%d", c.name, i%13)),
				Value:   []byte(fmt.Sprintf("%s-v%d", c.name, i)),
				Headers: []kafka.Header{{Key: "codec", Value: []byte(c.name)}, {Key: "i", Value: []byte(fmt.Sprint(i))}}}
		}
		err := w.WriteMessages(ctx, msgs...)
		w.Close()
		jsonl.Emit("produced", map[string]any{"codec": c.name, "count": len(msgs), "err": jsonl.Err(err)})
		total += len(msgs)
	}

	// Two readers of the group read everything, committing as they go.
	var mu sync.Mutex
	seen := map[int][]jsonl.Rec{}
	rctx, rcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	readers := make([]*kafka.Reader, 2)
	for m := range readers {
		readers[m] = kafka.NewReader(kafka.ReaderConfig{Brokers: a.Brokers, GroupID: a.Group, Topic: a.Topic,
			MaxWait: 200 * time.Millisecond, StartOffset: kafka.FirstOffset, HeartbeatInterval: time.Second,
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second})
		wg.Add(1)
		go func(m int, r *kafka.Reader) {
			defer wg.Done()
			for {
				msg, err := r.FetchMessage(rctx)
				if err != nil {
					return
				}
				mu.Lock()
				seen[m] = append(seen[m], toRec(msg))
				mu.Unlock()
				if err := r.CommitMessages(rctx, msg); err != nil {
					return
				}
			}
		}(m, readers[m])
	}
	jsonl.WaitFor(&mu, func() int { return len(seen[0]) + len(seen[1]) }, total, 90*time.Second)
	rcancel()
	wg.Wait()
	for m, r := range readers {
		r.Close()
		jsonl.Emit("consumed", map[string]any{"member": m, "records": seen[m]})
	}

	offs, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: a.Group,
		Topics: map[string][]int{a.Topic: seq(a.Partitions)}})
	if err != nil {
		jsonl.Fail("offset fetch", err)
	}
	committed := map[int]int64{}
	for _, p := range offs.Topics[a.Topic] {
		committed[p.Partition] = p.CommittedOffset
	}
	jsonl.Emit("committed", map[string]any{"offsets": committed})

	w := &kafka.Writer{Addr: kafka.TCP(a.Brokers...), Topic: a.Topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	late := make([]kafka.Message, 5)
	for i := range late {
		late[i] = kafka.Message{Key: []byte("late"), Value: []byte(fmt.Sprintf("late-%d", i))}
	}
	if err := w.WriteMessages(ctx, late...); err != nil {
		jsonl.Fail("late produce", err)
	}
	w.Close()
	third := kafka.NewReader(kafka.ReaderConfig{Brokers: a.Brokers, GroupID: a.Group, Topic: a.Topic,
		MaxWait: 200 * time.Millisecond})
	var resumed []jsonl.Rec
	for len(resumed) < 5 {
		msg, err := third.ReadMessage(ctx)
		if err != nil {
			jsonl.Fail("resume", err)
		}
		resumed = append(resumed, toRec(msg))
	}
	third.Close()
	jsonl.Emit("resumed", map[string]any{"records": resumed})

	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{a.Topic}})
	if err != nil {
		jsonl.Fail("metadata", err)
	}
	for _, t := range meta.Topics {
		jsonl.Emit("metadata", map[string]any{"topic": t.Name, "partitions": len(t.Partitions), "err": jsonl.Err(t.Error)})
	}
	groups, err := client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil {
		jsonl.Fail("list groups", err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.GroupID)
	}
	jsonl.Emit("groups", map[string]any{"names": names})
	desc, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{a.Group}})
	if err != nil {
		jsonl.Fail("describe groups", err)
	}
	for _, g := range desc.Groups {
		jsonl.Emit("group", map[string]any{"group": g.GroupID, "state": g.GroupState, "members": len(g.Members),
			"err": jsonl.Err(g.Error)})
	}
	cfg, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: a.Topic, ConfigNames: []string{"retention.ms"}}}})
	if err != nil {
		jsonl.Fail("describe configs", err)
	}
	for _, r := range cfg.Resources {
		vals := map[string]string{}
		for _, e := range r.ConfigEntries {
			vals[e.ConfigName] = e.ConfigValue
		}
		jsonl.Emit("configs", map[string]any{"topic": r.ResourceName, "values": vals, "err": jsonl.Err(r.Error)})
	}
	ends := map[int]int64{}
	for p := 0; p < a.Partitions; p++ {
		conn, err := kafka.DialLeader(ctx, "tcp", a.Brokers[0], a.Topic, p)
		if err != nil {
			jsonl.Fail("dial leader", err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			jsonl.Fail("last offset", err)
		}
		ends[p] = last
	}
	jsonl.Emit("ends", map[string]any{"offsets": ends})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

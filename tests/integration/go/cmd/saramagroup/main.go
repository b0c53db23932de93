// Command saramagroup drives Sluice with IBM/sarama: topics created through its
// ClusterAdmin, a SyncProducer per codec (keys, headers, acks=all), a two-member
// ConsumerGroup that marks and commits, a third member that resumes from the commits,
// and the admin reads. It prints the JSON lines test_go_clients.py reads.
package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sluice/tests/integration/go/internal/jsonl"

	"github.com/IBM/sarama"
)

// collector is a ConsumerGroupHandler that keeps what it reads and marks each message.
type collector struct {
	mu   *sync.Mutex
	into *[]jsonl.Rec
}

func (collector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (collector) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (c collector) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h := map[string]string{}
		for _, x := range m.Headers {
			h[string(x.Key)] = string(x.Value)
		}
		c.mu.Lock()
		*c.into = append(*c.into, jsonl.Rec{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value), Headers: h})
		c.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	return c
}

func main() {
	a, ctx, cancel := jsonl.Start(100)
	defer cancel()
	brokers := a.Brokers

	admin, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		jsonl.Fail("admin", err)
	}
	retention := "3600000"
	err = admin.CreateTopic(a.Topic, &sarama.TopicDetail{NumPartitions: int32(a.Partitions), ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	jsonl.Emit("created", map[string]any{"err": jsonl.Err(err)})
	err = admin.CreateTopic(a.Topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	jsonl.Emit("created-again", map[string]any{"err": jsonl.Err(err)})

	codecs := []struct {
		name  string
		codec sarama.CompressionCodec
	}{{"none", sarama.CompressionNone}, {"gzip", sarama.CompressionGZIP}, {"snappy", sarama.CompressionSnappy},
		{"lz4", sarama.CompressionLZ4}, {"zstd", sarama.CompressionZSTD}}
	total := 0
	for _, c := range codecs {
		cfg := config()
		cfg.Producer.Compression = c.codec
		p, err := sarama.NewSyncProducer(brokers, cfg)
		if err != nil {
			jsonl.Fail("producer", err)
		}
		msgs := make([]*sarama.ProducerMessage, a.PerCodec)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: a.Topic, Key: sarama.StringEncoder(fmt.Sprintf("%s-k%d", c.name, i%11)),
				Value:   sarama.StringEncoder(fmt.Sprintf("%s-v%d", c.name, i)),
				Headers: []sarama.RecordHeader{{Key: []byte("codec"), Value: []byte(c.name)}, {Key: []byte("i"), Value: []byte(fmt.Sprint(i))}}}
		}
		err = p.SendMessages(msgs)
		p.Close()
		jsonl.Emit("produced", map[string]any{"codec": c.name, "count": len(msgs), "err": jsonl.Err(err)})
		total += len(msgs)
	}

	var mu sync.Mutex
	seen := make([][]jsonl.Rec, 2)
	gctx, gcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	groups := make([]sarama.ConsumerGroup, 2)
	for m := range groups {
		g, err := sarama.NewConsumerGroup(brokers, a.Group, config())
		if err != nil {
			jsonl.Fail("group", err)
		}
		groups[m] = g
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			for gctx.Err() == nil {
				if err := g.Consume(gctx, []string{a.Topic}, collector{&mu, &seen[m]}); err != nil {
					return
				}
			}
		}(m)
	}
	jsonl.WaitFor(&mu, func() int { return len(seen[0]) + len(seen[1]) }, total, 90*time.Second)
	gcancel()
	wg.Wait()
	for m, g := range groups {
		g.Close() // commits what was marked
		jsonl.Emit("consumed", map[string]any{"member": m, "records": seen[m]})
	}

	all := make([]int32, a.Partitions)
	for i := range all {
		all[i] = int32(i)
	}
	offs, err := admin.ListConsumerGroupOffsets(a.Group, map[string][]int32{a.Topic: all})
	if err != nil {
		jsonl.Fail("offsets", err)
	}
	committed := map[int32]int64{}
	for p, b := range offs.Blocks[a.Topic] {
		committed[p] = b.Offset
	}
	jsonl.Emit("committed", map[string]any{"offsets": committed})

	p, err := sarama.NewSyncProducer(brokers, config())
	if err != nil {
		jsonl.Fail("late producer", err)
	}
	for i := 0; i < 5; i++ {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: a.Topic, Key: sarama.StringEncoder("late"),
			Value: sarama.StringEncoder(fmt.Sprintf("late-%d", i))}); err != nil {
			jsonl.Fail("late produce", err)
		}
	}
	p.Close()
	var late []jsonl.Rec
	third, err := sarama.NewConsumerGroup(brokers, a.Group, config())
	if err != nil {
		jsonl.Fail("third", err)
	}
	tctx, tcancel := context.WithCancel(ctx)
	go func() {
		for tctx.Err() == nil {
			if third.Consume(tctx, []string{a.Topic}, collector{&mu, &late}) != nil {
				return
			}
		}
	}()
	for ctx.Err() == nil {
		mu.Lock()
		n := len(late)
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tcancel()
	third.Close()
	mu.Lock()
	jsonl.Emit("resumed", map[string]any{"records": late})
	mu.Unlock()

	desc, err := admin.DescribeConsumerGroups([]string{a.Group})
	if err != nil {
		jsonl.Fail("describe groups", err)
	}
	for _, g := range desc {
		var gerr error
		if g.Err != sarama.ErrNoError {
			gerr = g.Err
		}
		jsonl.Emit("group", map[string]any{"group": g.GroupId, "state": g.State, "members": len(g.Members),
			"err": jsonl.Err(gerr)})
	}
	listed, err := admin.ListConsumerGroups()
	if err != nil {
		jsonl.Fail("list groups", err)
	}
	var names []string
	for n := range listed {
		names = append(names, n)
	}
	jsonl.Emit("groups", map[string]any{"names": names})
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: a.Topic})
	if err != nil {
		jsonl.Fail("describe config", err)
	}
	vals := map[string]string{}
	for _, e := range entries {
		if e.Name == "retention.ms" {
			vals[e.Name] = e.Value
		}
	}
	jsonl.Emit("configs", map[string]any{"topic": a.Topic, "values": vals})
	client, err := sarama.NewClient(brokers, config())
	if err != nil {
		jsonl.Fail("client", err)
	}
	ends := map[int32]int64{}
	for part := int32(0); part < int32(a.Partitions); part++ {
		if ends[part], err = client.GetOffset(a.Topic, part, sarama.OffsetNewest); err != nil {
			jsonl.Fail("end offset", err)
		}
	}
	client.Close()
	admin.Close()
	jsonl.Emit("ends", map[string]any{"offsets": ends})
}

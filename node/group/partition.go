package group

import "unicode/utf16"

// PartitionFor returns the __consumer_offsets partition that stores groupID
// and whose leader coordinates it: Kafka's
// Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount, so a
// group lands on the same partition number as it would in Kafka.
func PartitionFor(groupID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	return kafkaAbs(javaStringHashCode(groupID)) % partitions
}

// javaStringHashCode is java.lang.String.hashCode: s[0]*31^(n-1) + ... over
// UTF-16 code units, wrapping at 32 bits.
func javaStringHashCode(s string) int32 {
	var h int32
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		for i := 0; i < len(s); i++ {
			h = 31*h + int32(s[i])
		}
		return h
	}
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// kafkaAbs is org.apache.kafka.common.utils.Utils.abs: MinInt32 maps to 0
// rather than staying negative.
func kafkaAbs(n int32) int32 {
	switch {
	case n == -1<<31:
		return 0
	case n < 0:
		return -n
	default:
		return n
	}
}

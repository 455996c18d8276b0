package scanner

import (
	"strconv"
	"strings"
)

// Redisson's names for what a force-release of one holder touches (actions.ReleaseHolder), in
// Redisson 3.52.0's own naming (prefixName and suffixName: "{<name>}" unless the name has a
// "{" of its own), so every one of them lives in its lock's cluster slot.

// redissonSuffixed is Redisson's suffixName.
func redissonSuffixed(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// RedissonLevelKey is the key of one read level of an RReadWriteLock's reader (owner
// "<uuid>:<threadId>", level 1..its count): a string whose TTL is that level's lease.
func RedissonLevelKey(lock, owner string, level int) string {
	return redissonSuffixed(lock, owner) + redissonLevelInfix + strconv.Itoa(level)
}

// RedissonPermitsKey is an RPermitExpirableSemaphore's permits: a sorted set of permit ids
// (16 raw bytes) scored by their expiry in unix ms.
func RedissonPermitsKey(semaphore string) string {
	return redissonSuffixed(semaphore, redissonPermitsSuffix[1:])
}

// RedissonRWChannel is the channel an RReadWriteLock's waiters listen on.
func RedissonRWChannel(lock string) string { return redissonPrefixed(redissonRWChannelPrefix, lock) }

// RedissonSemaphoreChannel is the channel an RSemaphore's or RPermitExpirableSemaphore's
// waiters listen on: a release publishes the count of permits available after it.
func RedissonSemaphoreChannel(semaphore string) string {
	return redissonPrefixed(redissonSemaphoreChannelPrefix, semaphore)
}

// redissonSemaphoreChannelPrefix is RedissonPermitExpirableSemaphore's and RedissonSemaphore's
// channel prefix ("redisson_sc").
const redissonSemaphoreChannelPrefix = "redisson_sc"

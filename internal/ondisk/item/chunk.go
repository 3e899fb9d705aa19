package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// ChunkItem is a CHUNK_ITEM (key: FIRST_CHUNK_TREE, CHUNK_ITEM, logical
// start) in the chunk tree or the superblock's sys_chunk_array.
type ChunkItem = ondisk.Chunk

// DecodeChunkItem parses a chunk item with its stripes.
func DecodeChunkItem(b []byte) (ChunkItem, error) {
	c, err := ondisk.DecodeChunk(b)
	if err != nil {
		return c, err
	}
	return c, nil
}

// ChunkItemBytes encodes a chunk item to a new slice.
func ChunkItemBytes(c *ChunkItem) []byte {
	b := make([]byte, c.Size())
	c.Encode(b)
	return b
}

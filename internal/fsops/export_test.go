package fsops

// SetPublicReaderForTest lets the external test package plug in a reader.
func SetPublicReaderForTest(fn func(img string) (map[string]string, error)) { publicReader = fn }

// DescribeLineForTest formats one entry as the model does.
func DescribeLineForTest(mode, uid, gid, nlink uint32, body string, xattrs map[string]string) string {
	return describeLine(mode, uid, gid, nlink, body, xattrs)
}

import os
d = "/tmp/a26g-ino"; os.makedirs(d, exist_ok=True)
reuse = samect = 0; N = 2000
for i in range(N):
    p = os.path.join(d, "snapshot-1")
    with open(p + ".tmp", "wb") as f: f.write(b"A" * 300)
    os.link(p + ".tmp", p); os.unlink(p + ".tmp")
    fd = os.open(p, os.O_RDONLY); st = os.fstat(fd); os.close(fd)
    os.unlink(p)
    with open(p + ".t2", "wb") as f: f.write(b"C" * 300)
    os.link(p + ".t2", p); os.unlink(p + ".t2")
    st3 = os.lstat(p)
    reuse += st3.st_ino == st.st_ino
    samect += st3.st_ctime_ns == st.st_ctime_ns
    os.unlink(p)
print("inode reused:", reuse, "same ctime:", samect, "of", N)

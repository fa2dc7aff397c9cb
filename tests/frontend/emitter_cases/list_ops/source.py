def fn(n: int) -> List[int]:
    l = annotate(List[int], [])
    for i in range(n):
        l.append(i)
    l2 = [1, 2, 3]
    l2.extend(l)
    return l2[1:]

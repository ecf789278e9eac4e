from querybuild import QueryBuilder


def test_add_set_remove():
    qb = QueryBuilder({"q": "tea"})
    qb.add("tag", "green").add("tag", "black").add("page", 1)
    assert qb.build() == "q=tea&tag=green&tag=black&page=1"
    qb.set("tag", "oolong")
    assert qb.build() == "q=tea&tag=oolong&page=1"
    qb.remove("page")
    assert str(qb) == "q=tea&tag=oolong"
    assert qb.get_all("tag") == ["oolong"]
    assert len(qb) == 2


def test_set_new_key_appends():
    assert QueryBuilder().add("a", 1).set("b", [2, 3]).build() == "a=1&b=2&b=3"


def test_to_url():
    qb = QueryBuilder(sort=True).add("b", 1).add("a", 2)
    assert qb.to_url("https://e.org/x") == "https://e.org/x?a=2&b=1"

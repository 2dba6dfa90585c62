"""`longhaul serve` refuses what it cannot use before it starts, saying how to fix it."""


def test_a_reply_to_that_is_not_a_url_stops_serve(cli, tmp_path):
    result = cli("serve", "--home", str(tmp_path), "--nsi-reply-to", "ftp://nsa.example/")
    assert result.returncode != 0
    assert "--nsi-reply-to" in result.stderr + result.stdout
    assert "http" in result.stderr + result.stdout


def test_an_nsa_id_that_is_not_an_ogf_urn_stops_serve(cli, tmp_path):
    result = cli("serve", "--home", str(tmp_path), "--nsi-nsa-id", "nsa.ornl.gov")
    assert result.returncode != 0
    assert "--nsi-nsa-id must start 'urn:ogf:network:'" in result.stderr + result.stdout

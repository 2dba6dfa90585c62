// Keep each port list to the ports of the switch chosen beside it. Written for longhaul;
// the form works without it (the server checks every port).
for (const end of document.querySelectorAll("fieldset.end")) {
  const node = end.querySelector("select[name$=_node]");
  const port = end.querySelector("select[name$=_port]");
  const sync = () => {
    for (const option of port.options) {
      const other = option.dataset.node && option.dataset.node !== node.value;
      option.hidden = other;
      if (other && option.selected) port.value = "";
    }
  };
  node.addEventListener("change", sync);
  sync();
}

(function(){
  const KEY = "rlvr-inspect-labels:" + META.sample_set_hash;
  const labels = Object.assign({}, PREFILLED);
  try { Object.assign(labels, JSON.parse(localStorage.getItem(KEY) || "{}")); } catch (e) {}
  const cards = Array.from(document.querySelectorAll(".card"));
  function save(){ try { localStorage.setItem(KEY, JSON.stringify(labels)); } catch (e) {} }
  function paint(card){
    const l = labels[card.dataset.id];
    card.classList.toggle("read-agree", !!l && l.agree === true);
    card.classList.toggle("read-disagree", !!l && l.agree === false);
  }
  function count(){
    const read = Object.values(labels).filter(l => l.agree === true || l.agree === false);
    const dis = read.filter(l => l.agree === false).length;
    const rate = read.length ? ((read.length - dis) / read.length * 100).toFixed(1) + "%" : "-";
    document.getElementById("progress").textContent =
      read.length + " of " + cards.length + " read, " + dis + " disagree, agreement " + rate;
  }
  function record(card){
    const id = card.dataset.id;
    const choice = card.querySelector("input[type=radio]:checked");
    const comment = card.querySelector("textarea").value;
    const agree = !choice || choice.value === "unread" ? null : choice.value === "agree";
    labels[id] = {id: id, agree: agree, comment: comment, verdict: card.dataset.verdict,
                  reward: card.dataset.reward === "null" ? null : parseFloat(card.dataset.reward)};
    save(); paint(card); count();
  }
  cards.forEach(card => {
    const l = labels[card.dataset.id];
    if (l) {
      const value = l.agree === true ? "agree" : l.agree === false ? "disagree" : "unread";
      const input = card.querySelector("input[value=" + value + "]");
      if (input) input.checked = true;
      card.querySelector("textarea").value = l.comment || "";
    }
    card.querySelectorAll("input[type=radio]").forEach(i => i.addEventListener("change", () => record(card)));
    card.querySelector("textarea").addEventListener("input", () => record(card));
    paint(card);
  });
  function filter(){
    const flaggedOnly = document.getElementById("flagged-only").checked;
    const unreadOnly = document.getElementById("unread-only").checked;
    cards.forEach(card => {
      const l = labels[card.dataset.id];
      const read = !!l && (l.agree === true || l.agree === false);
      card.classList.toggle("hidden", (flaggedOnly && card.dataset.flagged !== "1") || (unreadOnly && read));
    });
  }
  document.getElementById("flagged-only").addEventListener("change", filter);
  document.getElementById("unread-only").addEventListener("change", filter);
  document.getElementById("export").addEventListener("click", () => {
    const lines = Object.values(labels).filter(l => l.agree !== null || l.comment)
      .map(l => JSON.stringify(l)).join("\n");
    const blob = new Blob([lines ? lines + "\n" : ""], {type: "application/x-ndjson"});
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = "labels.jsonl";
    document.body.appendChild(a); a.click(); a.remove();
  });
  count();
})();

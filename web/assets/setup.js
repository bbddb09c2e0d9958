// Sends the first-run setup form to POST /api/v1/setup with the token from the page URL.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("setup");
  const result = document.getElementById("result");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = {
      token: new URLSearchParams(location.search).get("token") || "",
      org_name: data.get("org_name"),
      email: data.get("email"),
      password: data.get("password"),
    };
    const response = await fetch("/api/v1/setup", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await response.json();
    result.textContent = response.ok
      ? `Created ${json.user.email}, owner of ${json.org.name}. You can sign in now.`
      : json.detail;
    if (response.ok) form.remove();
  });
});
